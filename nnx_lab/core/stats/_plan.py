"""How the statistics of some arrays are launched: a :class:`LaunchPlan`, worked out once per structure
(a viewer's refreshes reuse it while the structure is unchanged), so that a refresh does no per-array
planning: each array's kernels and statistic names, the chunks that may share a compiled program
(:mod:`._programs`) with their keys, the table rows each chunk fills, and each chunk's program once
it is compiled (found by its key once, not hashed again at every refresh).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import jax
import numpy as np

from ._kernels import KERNELS, STAT_NAMES, kernel_and_names
from ._layered import layered, layered_origin
from ._one_pass import PlanHints
from ._programs import MAX_PROGRAM_ARRAYS, Program, device_groups, structure_key
from ._shards import ShardParts, splits
from ._stacked import Stacked, stacked, stacked_origin
from ._table import StatsError

if TYPE_CHECKING:
    from ._types import Kernel, StructureKey

__all__ = ["LaunchPlan"]


class LaunchPlan:
    """How the statistics of ``arrays`` are launched (see the module docstring).

    A chunk holds arrays of one set of devices, sorted by spec (kernel, shape, dtype), at most
    :data:`._programs.MAX_PROGRAM_ARRAYS` of them: a model of many repeated blocks has few distinct
    chunks, so few programs to compile, each compiled in seconds, not minutes."""

    def __init__(self, arrays: Sequence[Any], layers: dict | None = None, *, split: bool = True):
        # split: arrays on several devices reduced by their shards (False: these are the shards already)
        # layers: {i: (axis, n)}: arrays[i:i + n] are the n layers of arrays[i] (one call mapped over axis)
        self.errors: list[tuple[int, StatsError]] = []
        # (i, kernel, masked, names, size)
        self.calls: list[tuple[int, Kernel, Kernel | None, tuple[str, ...], int]] = []
        self.counts: list[int] = []  # per call: the rows it fills (its layers, or 1)
        covered = 0
        for i, x in enumerate(arrays):
            if i < covered:
                continue
            dtype = x.dtype if isinstance(x, jax.Array) else np.asarray(x).dtype
            kernel, masked, names = kernel_and_names(dtype)
            axis, count = (layers or {}).get(i, (None, 1))
            covered = i + count
            if kernel is None:
                self.errors.append((i, StatsError(f"no statistics for dtype {dtype}")))
                continue
            size = (int(np.size(x)) if not isinstance(x, jax.Array) else int(x.size)) // count
            if size == 0:
                continue
            if isinstance(axis, Stacked):  # a sharded array's shards side by side (._shards)
                kernel, masked = stacked(kernel, axis.devices), stacked(masked, axis.devices)
            elif axis is not None:
                kernel, masked = layered(kernel, axis), layered(masked, axis)
            self.calls.append((i, kernel, masked, names, size))
            self.counts.append(count)
        self.index = [c[0] for c in self.calls]
        self.all_device = all(isinstance(arrays[i], jax.Array) for i in self.index)
        # Per array: its size, and which statistics its dtype has (a mask over STAT_NAMES, and their columns).
        self.sizes = np.ones(len(arrays))
        self.has = np.zeros((len(arrays), len(STAT_NAMES)), bool)
        self.stat_columns: list[tuple[int, ...]] = [()] * len(arrays)
        for (i, _, _, names, size), count in zip(self.calls, self.counts):
            cols = tuple(STAT_NAMES.index(name) for name in names)
            for r in range(i, i + count):
                self.sizes[r], self.stat_columns[r] = size, cols
                self.has[r, list(cols)] = True
        self.chunks: list[tuple[list[int], StructureKey]] = []  # (positions in calls, program key)
        # Arrays on several devices are reduced shard by shard (._shards): then every array's statistics
        # come from ``parts``, a plan of single-device parts, and this plan only describes the rows.
        shards = ShardParts(arrays, layers) if split and any(splits(arrays[i]) for i in self.index) else None
        self.shards = shards
        self.parts = LaunchPlan(shards.expand(arrays), shards.layers, split=False) if shards is not None else None
        if shards is None and len(self.calls) > 1 and jax.process_count() == 1:
            # Several processes must launch the same programs in the same order: a program compiled
            # in the background would be ready on one process before another, so they keep per-array kernels.
            xs = [arrays[i] for i in self.index]
            ranks: dict[int, str] = {}  # per kernel, per dtype: worked out once, not per array
            dtype_names: dict[np.dtype, str] = {}

            def spec(m: int) -> tuple:
                kernel, x = self.calls[m][1], xs[m]
                rank = ranks.get(id(kernel))
                if rank is None:
                    rank = ranks[id(kernel)] = kernel_rank(kernel)
                name = dtype_names.get(x.dtype)
                if name is None:
                    name = dtype_names[x.dtype] = str(x.dtype)
                return (rank, len(x.shape), x.shape, name)

            for members in device_groups(xs):  # device arrays only
                members = sorted(members, key=spec)
                for start in range(0, len(members), MAX_PROGRAM_ARRAYS):
                    chunk = members[start : start + MAX_PROGRAM_ARRAYS]
                    if len(chunk) > 1:
                        key = structure_key([self.calls[m][1] for m in chunk], [xs[m] for m in chunk])
                        if key is not None:
                            self.chunks.append((chunk, key))
        self.chunk_rows = [np.asarray(self.rows(chunk), np.intp) for chunk, _ in self.chunks]
        self.programs: list[Program | None] = [None] * len(self.chunks)  # each chunk's, once compiled
        self._owners: dict[int, np.ndarray] = {}
        # Each chunk's next one-pass guesses (._one_pass), shared by the plans of its structure.
        self.hints = PlanHints(self.chunks, {m: arrays[self.index[m]].dtype for chunk, _ in self.chunks for m in chunk})

    def rows(self, members: Sequence[int]) -> list[int]:
        """The table rows the calls ``members`` fill, in order (a layered call fills one per layer)."""
        index, counts = self.index, self.counts
        return [r for m in members for r in range(index[m], index[m] + counts[m])]

    def owners(self, c: int) -> np.ndarray:
        """Per row of chunk ``c``'s :attr:`chunk_rows`: the call (position in :attr:`calls`) that fills it."""
        if c not in self._owners:
            chunk = self.chunks[c][0]
            self._owners[c] = np.repeat(np.asarray(chunk, np.intp), [self.counts[m] for m in chunk])
        return self._owners[c]


def kernel_rank(kernel: Kernel) -> str:
    """Where ``kernel`` sorts among a chunk's arrays: the same in every process. (Its ``id`` is a
    memory address: sorting by it ordered a chunk's arrays differently from one session to the next,
    so the program's text, and with it its key in the disk cache, changed and a later session
    compiled the program again instead of loading it.)"""
    for origin, how in ((layered_origin(kernel), "layers"), (stacked_origin(kernel), "shards")):
        if origin is not None:
            return f"{kernel_rank(origin[0])} {how} {origin[1]!r}"
    if kernel in KERNELS:
        return f"{KERNELS.index(kernel):03d}"
    return f"~{getattr(kernel, '__module__', '')}.{getattr(kernel, '__qualname__', type(kernel).__name__)}"
