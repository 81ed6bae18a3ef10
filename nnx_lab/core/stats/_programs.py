"""One compiled program per refresh: every statistics kernel of a model in one executable.

A device runs its queue in order, and a client bounds how many computations may wait in it. With
one kernel call per array, a refresh of a model with N arrays takes N places in a queue that a
training loop keeps full, and each of those dispatches waits for a training step to finish: the
loop's host thread is held for about N steps. One program per refresh takes one place, is launched
by one call, and its results come back as a few stacked arrays (one per result dtype).

A program is compiled once per model *structure*: the kernel and the (shape, dtype, sharding) of
every array, in order. It is compiled on a background thread the second time a structure is
refreshed (a structure seen once is often never refreshed again), or at once for a viewer; until it is ready, a refresh
launches the per-array kernels, whose executables are shared between all models.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._executables import compile_program
from ._kernels import float_kernel, float_one_pass, in_background
from ._shards import own_mesh, stacked_origin

MAX_PROGRAMS = 32  # structures kept compiled (least recently used dropped)
# Beyond this many arrays a structure keeps the per-array kernels: XLA's compile time grows with the
# number of parameters (measured: 1,000 arrays 1.2 s, 10,000 arrays 136 s of a core, the viewer skipping
# refreshes all the while), which would cost more than the queue places it saves.
MAX_PROGRAM_ARRAYS = 1024
MAX_SEEN_ONCE = 1024  # structures seen once, remembered by hash only (a key may hold 10,000 specs)
_programs: OrderedDict = OrderedDict()  # structure -> a Program, COMPILING or _FAILED
_seen_once: OrderedDict = OrderedDict()  # hash(structure) -> None
_lock = threading.Lock()
_compiled = 0  # programs compiled so far


def structure_key(kernels: Sequence[Any], arrays: Sequence[Any]) -> Any:
    """The key of a program: the kernels and every array's (shape, dtype, sharding); None when some
    sharding cannot be hashed."""
    key = tuple((id(k), x.shape, x.dtype, x.sharding) for k, x in zip(kernels, arrays))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def device_groups(arrays: Sequence[Any]) -> list[list[int]]:
    """Indices of the device arrays that may share a program (one program runs on one set of
    devices), in order; host values are left out."""
    groups: dict[Any, list[int]] = {}
    for j, x in enumerate(arrays):
        if isinstance(x, jax.Array):
            groups.setdefault(frozenset(x.sharding.device_set), []).append(j)
    return list(groups.values())


COMPILING = "compiling"


def program_for(
    kernels: Sequence[Any], arrays: Sequence[Any], *, background: bool, eager: bool = False, key: Any = None
) -> Program | str | None:
    """The compiled program for this structure; :data:`COMPILING` while it is being compiled on a
    thread; None when there is none (yet, or ever). The second time a structure is asked for (the
    first with ``eager``), its program is compiled: on a thread with ``background`` (the
    caller goes on with per-array kernels meanwhile), else right here."""
    if len(arrays) > MAX_PROGRAM_ARRAYS:
        return None
    key = structure_key(kernels, arrays) if key is None else key
    if key is None:
        return None
    with _lock:
        entry = _programs.get(key)
        if isinstance(entry, Program):
            _programs.move_to_end(key)
            return entry
        if entry is not None:
            return COMPILING if entry == COMPILING else None  # compiling, or failed: never retried
        if not eager and hash(key) not in _seen_once:  # a collision only compiles a program early
            _seen_once[hash(key)] = None
            if len(_seen_once) > MAX_SEEN_ONCE:
                _seen_once.popitem(last=False)
            return None
        _programs[key] = COMPILING
    specs = [jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding) for x in arrays]
    if background:
        # Not a daemon: the interpreter waits for a compile to finish before it exits (XLA aborts
        # the process when finalization interrupts a compile).
        threading.Thread(target=_compile_in_turn, args=(key, tuple(kernels), specs), name="nnx_lab-program").start()
        return None
    return _compile(key, tuple(kernels), specs)


def compiling() -> bool:
    """Whether some program is being compiled (or waits its turn) right now."""
    with _lock:
        return any(v == COMPILING for v in _programs.values())


def programs_compiled() -> int:
    """Programs compiled so far (part of :func:`.stats.kernel_cache_size`)."""
    return _compiled


_FAILED = "failed"  # never retried: the per-array kernels describe this structure


def _remember(key: Any, value: Any) -> None:
    """Keep a compiled (or failed) structure; beyond MAX_PROGRAMS the least recently used goes."""
    _programs[key] = value
    _programs.move_to_end(key)
    settled = [k for k, v in _programs.items() if v != COMPILING]
    for k in settled[:-MAX_PROGRAMS]:
        del _programs[k]


_one_at_a_time = threading.Lock()  # background compiles run one after another (a model's chunks queue up)


def _compile_in_turn(key: Any, kernels: tuple, specs: list) -> None:
    with _one_at_a_time, in_background():  # the user's own compiles come first (see _kernels)
        _compile(key, kernels, specs)


def _compile(key: Any, kernels: tuple, specs: list) -> Program | None:
    global _compiled
    try:
        program = Program(kernels, specs)
    except Exception:  # whatever failed will fail per array too, with a message per row
        program = None
    with _lock:
        if program is None:
            _remember(key, _FAILED)
        else:
            _remember(key, program)
            _compiled += 1
    return program


# On XLA's CPU backend the one-pass kernel's variadic reduce is one vectorised loop only with the
# classic emitters (measured, 512x2048 float32: 0.28 ms, about two parallel sums; with the newer
# fusion emitters 2.5-4.8 ms); LLVM's expensive passes bring reductions nothing (the same run time,
# 40% less compile time). Other backends ignore CPU options; one that refuses an option gets the next set.
COMPILER_OPTIONS = (
    {"xla_llvm_disable_expensive_passes": True, "xla_cpu_use_fusion_emitters": False},
    {"xla_llvm_disable_expensive_passes": True},
    {},
)
STACK_BYTES = 256 * 1024  # arrays this small and of one spec are reduced together, stacked


class Program:
    """The kernels of one structure compiled as one executable whose outputs are concatenated by
    dtype and shape: launched with :meth:`launch`, its host results gathered per array by :meth:`columns`.

    Small single-device arrays of the same kernel, shape and dtype (a deep stack of LayerNorms, an
    optimizer's moments of small biases) are stacked and reduced by one vmapped kernel: compile time
    follows the number of distinct specs, not of arrays, at the cost of a transient copy of those
    small arrays (each at most :data:`STACK_BYTES`). Every other array gets its own kernel inside
    the program, reading it in place (never copied, never gathered)."""

    def __init__(self, kernels: Sequence[Any], specs: Sequence[jax.ShapeDtypeStruct]):
        # Sharded arrays' shards side by side over their devices (._shards: stacked kernels, one row per
        # shard): the program is the single-device program of one device's blocks, run on every device
        # at once inside one shard_map (no collective); a device's rows stay on it until fetched.
        origins = [stacked_origin(k) for k in kernels]
        self._across = len(specs[0].sharding.device_set) > 1 and all(o is not None for o in origins)
        if self._across:
            outer_specs, sharding = specs, specs[0].sharding
            n = len(sharding.device_set)
            local = jax.sharding.SingleDeviceSharding(next(iter(sharding.device_set)))
            kernels = [kernel for kernel, _ in origins]
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
        self._hint_dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
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
        if self._across:
            per_device = run
            block = sharding.spec

            def run(*blocks):  # noqa: F811 - each device's outputs, side by side: [device, rows, ...]
                return tuple(out[None] for out in per_device(*blocks))

            run = jax.shard_map(
                run, mesh=sharding.mesh, in_specs=(block,) * len(specs), out_specs=block, check_vma=False
            )
            specs = outer_specs
        with own_mesh(sharding.mesh) if self._across else contextlib.nullcontext():
            lowered = jax.jit(run).lower(*specs, *hints)  # (fills ``layout`` as it traces ``run``)
        self._mesh = sharding.mesh if self._across else None
        if self._across:
            # A device's rows follow one another in the fetched outputs (see columns): an array's come
            # one per device, n in a row.
            layout[:] = [
                (treedef, [(out, row * n) for out, row in places], count * n) for treedef, places, count in layout
            ]
        # A backend that refuses an option gets the next set; single-device programs are kept on disk.
        self._executable = compile_program(lowered, COMPILER_OPTIONS, specs)
        self._layout = list(layout)
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

    def launch(self, arrays: Sequence[Any], shifts: np.ndarray | None = None, exps: np.ndarray | None = None) -> tuple:
        """Dispatch the program on ``arrays`` (never waits); its results stay on device. ``shifts``
        and ``exps``: the guesses of the arrays at :attr:`one_pass` (:mod:`._one_pass`; zeros when
        not given)."""
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

    def columns(self, host_outputs: Sequence[np.ndarray]) -> tuple:
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
