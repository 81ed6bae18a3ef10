"""A compiled statistics program: the kernels of one model structure as one executable (see
:mod:`._programs`, which keeps one per structure and compiles it in the background)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..compat import outside_context_mesh
from ._compiling import CPU_OPTIONS
from ._executables import compile_program
from ._inflight import admit, launched
from ._kernels import float_kernel, float_one_pass
from ._stacked import own_mesh, stacked_origin

if TYPE_CHECKING:
    from ._types import Kernel, Outputs, Value


__all__ = ["COMPILER_OPTIONS", "STACK_BYTES", "Program"]


# On XLA's CPU backend the one-pass kernel's variadic reduce is one vectorised loop only with the
# classic emitters (about 10x faster: benchmarks/README.md). Other backends ignore CPU options; one
# that refuses an option gets the next set.
COMPILER_OPTIONS = (CPU_OPTIONS, {"xla_llvm_disable_expensive_passes": True}, {})
STACK_BYTES = 256 * 1024  # arrays this small and of one spec are reduced together, stacked


class Program:
    """The kernels of one structure compiled as one executable whose outputs are concatenated by
    dtype and shape: launched with :meth:`launch`, its host results gathered per array by :meth:`columns`.

    Small single-device arrays of the same kernel, shape and dtype (a deep stack of LayerNorms, an
    optimizer's moments of small biases) are stacked and reduced by one vmapped kernel: compile time
    follows the number of distinct specs, not of arrays, at the cost of a transient copy of those
    small arrays (each at most :data:`STACK_BYTES`). Every other array gets its own kernel inside
    the program, reading it in place (never copied, never gathered)."""

    def __init__(self, kernels: Sequence[Kernel], specs: Sequence[jax.ShapeDtypeStruct]):
        # Sharded arrays' shards side by side over their devices (._shards: stacked kernels, one row per
        # shard): the program is the single-device program of one device's blocks, run on every device
        # at once inside one shard_map (no collective); a device's rows stay on it until fetched.
        origins = [stacked_origin(k) for k in kernels]
        outer_specs, sharding = specs, specs[0].sharding
        n = len(sharding.device_set)
        self._across = n > 1 and all(o is not None for o in origins)
        if self._across:
            local = jax.sharding.SingleDeviceSharding(next(iter(sharding.device_set)))
            kernels = [o[0] for o in origins if o is not None]  # (every one is, across devices)
            specs = [
                jax.ShapeDtypeStruct((s.shape[0] // n,) + tuple(s.shape[1:]), s.dtype, sharding=local) for s in specs
            ]
        batches: dict[tuple, list[int]] = {}
        for j, (kernel, spec) in enumerate(zip(kernels, specs)):
            small = len(spec.sharding.device_set) == 1 and spec.size * spec.dtype.itemsize <= STACK_BYTES
            batches.setdefault((id(kernel), spec.shape, str(spec.dtype)) if small else ("alone", j), []).append(j)
        batches_list = list(batches.values())
        layout: list = [None] * len(specs)  # per array: its result's treedef, per leaf (output, row), its rows
        # Single-device float arrays get the one-pass kernel, given a shift and an exponent each.
        self.one_pass = np.asarray(
            [
                j
                for j, (kernel, spec) in enumerate(zip(kernels, specs))
                if kernel is float_kernel and len(spec.sharding.device_set) == 1 and not self._across
            ],
            np.int64,
        )  # (guesses are per array, not per shard)
        hint = {int(j): h for h, j in enumerate(self.one_pass)}
        x64 = jax.config.jax_enable_x64  # pyright: ignore[reportAttributeAccessIssue] - jax's Config sets its flags as attributes at run time
        self._hint_dtype = np.float64 if x64 else np.float32
        # The guesses are two more inputs, on the device of the one-pass arrays (a program runs on one
        # set of devices, and one-pass arrays are single-device); a program without any takes none.
        hinted = len(self.one_pass) > 0
        device = next(iter(specs[0].sharding.device_set))
        self._hint_sharding = jax.sharding.SingleDeviceSharding(device) if hinted else None

        def run(*args):
            xs, (shifts, exps) = (args[:-2], args[-2:]) if hinted else (args, (None, None))
            outputs: dict[tuple, list] = {}
            rows: dict[tuple, int] = {}
            for members in batches_list:
                kernel = kernels[members[0]]
                if members[0] in hint:  # mapped over the arrays stacked (or over one, read in place)
                    assert shifts is not None and exps is not None  # (a program with one-pass arrays is hinted)
                    at = np.asarray([hint[j] for j in members])
                    stacked = xs[members[0]][None] if len(members) == 1 else jnp.stack([xs[j] for j in members])
                    result = jax.vmap(float_one_pass)(stacked, shifts[at], exps[at])
                elif len(members) == 1:
                    result = kernel(xs[members[0]])
                else:
                    result = jax.vmap(kernel)(jnp.stack([xs[j] for j in members]))
                # One row per array, or per layer for a kernel mapped over a layer axis (_layers.layered).
                result = jax.tree.map(lambda leaf: leaf.reshape(-1, leaf.shape[-1]), result)
                count = jax.tree.leaves(result)[0].shape[0] // len(members)
                leaves, treedef = jax.tree.flatten(result)
                places = []
                for leaf in leaves:
                    key = (str(leaf.dtype), leaf.shape[1:])
                    if key not in outputs:
                        outputs[key], rows[key] = [], 0
                    places.append((list(outputs).index(key), rows[key]))
                    outputs[key].append(leaf)
                    rows[key] += leaf.shape[0]
                for k, j in enumerate(members):
                    layout[j] = (treedef, [(out, row + k * count) for out, row in places], count)
            return tuple(jnp.concatenate(parts) for parts in outputs.values())

        k = len(self.one_pass)
        hints = (
            [
                jax.ShapeDtypeStruct((k,), self._hint_dtype, sharding=self._hint_sharding),
                jax.ShapeDtypeStruct((k,), np.int32, sharding=self._hint_sharding),
            ]
            if hinted
            else []
        )
        program: Callable[..., Outputs] = run
        mesh = None
        if self._across:
            assert isinstance(sharding, jax.sharding.NamedSharding)  # (shards side by side: ._stacked.stack_sharding)
            mesh, block = sharding.mesh, sharding.spec

            def side_by_side(*blocks):  # each device's outputs, side by side: [device, rows, ...]
                return tuple(out[None] for out in run(*blocks))

            program = jax.shard_map(
                side_by_side, mesh=mesh, in_specs=(block,) * len(specs), out_specs=block, check_vma=False
            )
            specs = outer_specs
        with own_mesh(mesh) if self._across else outside_context_mesh():
            lowered = jax.jit(program).lower(*specs, *hints)  # (fills ``layout`` as it traces ``run``)
        self._mesh = mesh if self._across else None
        if self._across:
            # A device's rows follow one another in the fetched outputs (see columns): an array's come
            # one per device, n in a row.
            layout[:] = [
                (treedef, [(out, row * n) for out, row in places], count * n) for treedef, places, count in layout
            ]
        # A backend that refuses an option gets the next set; single-device programs are kept on disk.
        self._executable = compile_program(lowered, COMPILER_OPTIONS, specs)
        self._rows = sum(count for _, _, count in layout)  # the table rows the program fills
        # Where each array's result leaves sit in the outputs: per (leaf, output), the table rows and output rows.
        gather: dict[tuple[int, int], tuple[list, list]] = {}
        start = 0
        for _, places, count in layout:
            for leaf, (out, row) in enumerate(places):
                js, rows = gather.setdefault((leaf, out), ([], []))
                js.extend(range(start, start + count))
                rows.extend(range(row, row + count))
            start += count
        self._gather = {key: (np.asarray(js), np.asarray(rows)) for key, (js, rows) in gather.items()}
        first_row = np.cumsum([0] + [count for _, _, count in layout])
        self.one_pass_rows = first_row[self.one_pass]  # the table rows (of :meth:`columns`) of the one-pass arrays

    def launch(
        self, arrays: Sequence[Value], shifts: np.ndarray | None = None, exps: np.ndarray | None = None
    ) -> Outputs:
        """Dispatch the program on ``arrays`` (waits only while their devices hold as many launches of
        ours as :mod:`._inflight` allows); its results stay on device. ``shifts`` and ``exps``: the
        guesses of the arrays at :attr:`one_pass` (:mod:`._one_pass`; zeros when not given)."""
        first = arrays[0] if len(arrays) else None
        admit(first)
        outputs = self._launch(arrays, shifts, exps)
        launched(first, outputs)
        return outputs

    def _launch(self, arrays: Sequence[Value], shifts: np.ndarray | None, exps: np.ndarray | None) -> Outputs:
        k = len(self.one_pass)
        if self._mesh is not None:
            with own_mesh(self._mesh):
                return self._executable(*arrays)
        if not k:
            return self._executable(*arrays)
        shifts = np.zeros(k) if shifts is None else shifts
        exps = np.zeros(k, np.int32) if exps is None else exps
        hints = jax.device_put([np.asarray(shifts, self._hint_dtype), np.asarray(exps, np.int32)], self._hint_sharding)
        return self._executable(*arrays, *hints)

    def columns(self, host_outputs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[int, int]]]:
        """From the fetched outputs: every array's floats ``[k, 6]`` and counts ``[k, 4]`` (in the
        order the arrays were given, a layered array one row per layer), and ``{row: (min, max)}`` for integer arrays."""
        k = self._rows
        if self._across:  # [device, array, ...] -> the arrays' rows one after another, as concatenated
            host_outputs = [np.moveaxis(np.asarray(h), 1, 0).reshape(-1, *np.shape(h)[2:]) for h in host_outputs]
        floats, counts = np.empty((k, 6)), np.empty((k, 4), np.int64)
        for (leaf, out), (js, rows) in self._gather.items():
            part = host_outputs[out][rows]
            if leaf == 0:
                floats[js] = part
            elif leaf == 1:
                counts[js] = part
        exact = {}
        for (leaf, out), (js, rows) in self._gather.items():
            if leaf == 2:
                exact.update(zip(js.tolist(), map(tuple, host_outputs[out][rows].tolist())))
        return floats, counts, exact
