"""Statistics of arrays sharded over several devices, from their shards: no collective, ever.

A kernel run on a sharded array ends in all-reduces across its devices. Such launches are fragile
outside the user's own program order: two made at once from two threads may reach the devices in
different orders and deadlock, and on XLA's CPU client about 40 independent ones in flight at once
deadlock even from one thread; their programs also compile slowly (figures: benchmarks/README.md).

So in a single process, an array spanning several devices is never reduced as a whole: each of its
distinct shards (``replica_id == 0``: a replicated array is read once) is an ordinary single-device
array, reduced by the same kernels, programs and disk cache as any other, and the host combines the
shards' few numbers into the array's (counts and sums add; mean and variance by Chan's parallel
formula, in float64; extremes by min/max). A stacked Variable whose layer axis is sharded gets each
layer's row from the shards that hold that layer.

An array whose distinct shards sit one per device on several devices is not split into one part per
device either (each device would compile its own program): its shards are reduced side by side
(:mod:`._stacked`). With several processes (an array not fully addressable) the kernels stay SPMD:
every process launches them at the same points (see ``core.live._engine``'s lockstep).

>>> import jax, numpy as np
>>> parts = ShardParts([np.zeros(3)], {})
>>> parts.split
False
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

import jax
import numpy as np

from ._stacked import STACK, Stacked, stack_sharding, stacked_array

if TYPE_CHECKING:
    from ._table import StatsTable

__all__ = ["ShardParts", "splits"]


def splits(x: object) -> bool:
    """Whether ``x`` is reduced shard by shard: a fully addressable array on several devices."""
    if not isinstance(x, jax.Array) or jax.process_count() > 1:
        return False
    try:
        return len(x.sharding.device_set) > 1 and x.is_fully_addressable
    except RuntimeError:  # a deleted array: its kernel call says so
        return False


class ShardParts:
    """Which single-device parts stand for a list of arrays (a launch plan's), and how their
    statistics combine back into the arrays' rows. Worked out once per structure (shapes, dtypes and
    shardings fixed), used at every refresh: :meth:`expand` is one ``addressable_data`` per shard.

    ``layers``: ``{i: (axis, n)}``, ``arrays[i:i + n]`` the n layers of ``arrays[i]`` (``_layers``)."""

    def __init__(self, arrays: Sequence[Any], layers: dict | None):
        layers = layers or {}
        # per part: (array position, its shard's addressable index, None, or STACK)
        self._take: list[tuple[int, int | str | None]] = []
        self.targets: list[int] = []  # per part: the array row (a layer's row for a stacked one) it counts towards
        self.layers: dict[int, tuple[int | Stacked, int]] = {}  # the parts' own layer blocks, for their launch plan
        self.combined = np.zeros(len(arrays), bool)  # rows made of several shards' numbers
        self._stacks: dict[int, tuple] = {}  # first part slot -> (addressable indices, shape, sharding) of a stack
        covered = 0
        for i, x in enumerate(arrays):
            if i < covered:
                continue
            axis, count = layers.get(i, (None, 1))
            covered = i + count
            if not splits(x):
                if axis is not None:
                    self.layers[len(self._take)] = (axis, count)
                for r in range(count):
                    self._take.append((i + r, None))
                    self.targets.append(i + r)
                continue
            self.combined[i : i + count] = True
            kept = [(k, shard) for k, shard in enumerate(x.addressable_shards) if shard.replica_id == 0]
            if axis is None and len(kept) > 1 and len({shard.device for _, shard in kept}) == len(kept):
                devices = tuple(shard.device for _, shard in kept)
                shape = (len(kept) * kept[0][1].data.shape[0],) + tuple(kept[0][1].data.shape[1:]) if x.ndim else None
                if shape is not None:  # one part: the shards side by side over a 1-D mesh of their devices
                    self.layers[len(self._take)] = (Stacked(devices), len(kept))
                    self._stacks[len(self._take)] = (tuple(k for k, _ in kept), shape, stack_sharding(devices))
                    for _ in kept:
                        self._take.append((i, STACK))
                        self.targets.append(i)
                    continue
            for k, shard in enumerate(x.addressable_shards):
                if shard.replica_id != 0:
                    continue
                first, stop = (0, 1) if axis is None else _layer_range(shard.index[axis], count)
                if stop <= first:
                    continue  # an empty shard (a dimension the mesh does not divide)
                if axis is not None:
                    self.layers[len(self._take)] = (axis, stop - first)
                for r in range(first, stop):
                    self._take.append((i, k))
                    self.targets.append(i + r)
        self.split = bool(self.combined.any())
        self.targets_array = np.asarray(self.targets, np.intp)

    def expand(self, arrays: Sequence[Any]) -> list[Any]:
        """The parts of this refresh's ``arrays`` (same structure as when made): single-device
        arrays, no copy. A deleted array stands for its own parts: its kernel call says so."""
        parts = []
        stack = None
        for slot, (i, k) in enumerate(self._take):
            x = arrays[i]
            if k is STACK:
                if slot in self._stacks:
                    stack = stacked_array(x, *self._stacks[slot])
                x = stack
            elif k is not None:
                try:
                    x = x.addressable_data(k)
                except RuntimeError:  # deleted or donated: reduced as is, its kernel's row says so
                    pass
            parts.append(x)
        return parts

    def refs(self, arrays: Sequence[Any]) -> list[Callable[[], Any]]:
        """Per part, a function that gives it again later (None once its array is gone), holding its
        array by weak reference: a refresh in flight keeps no step's arrays alive, not even a shard."""
        out: list[Callable[[], Any]] = []
        for slot, (i, k) in enumerate(self._take):
            out.append(_part_ref(arrays[i], self._stacks[slot] if k is STACK and slot in self._stacks else k))
        return out

    def combine(self, parts: StatsTable, table: StatsTable, sizes: np.ndarray) -> None:
        """Fill ``table`` (a StatsTable of the arrays) from ``parts`` (the parts' StatsTable);
        ``sizes``: the elements of each part (per layer for a layered part)."""
        t = self.targets_array
        alone = ~self.combined[t]
        if alone.any():  # arrays on one device: their numbers as they are
            rows, src = t[alone], np.flatnonzero(alone)
            table._floats[rows], table._counts[rows] = parts._floats[src], parts._counts[src]
            table._filled[rows] = parts._filled[src]
            for p in src.tolist():
                if p in parts._exact:
                    table._exact[int(t[p])] = parts._exact[p]
                if p in parts.errors:
                    table.errors[int(t[p])] = parts.errors[p]
        src = np.flatnonzero(~alone)
        if not len(src):
            return
        rows = t[src]
        f, c = parts._floats[src], parts._counts[src]
        filled = parts._filled[src]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = c[:, 3]
            mean, std, norm = np.ldexp(f[:, 0], e), np.ldexp(f[:, 1], e), np.ldexp(f[:, 4], e)
            n = np.where(filled, sizes[src] - c[:, 0] - c[:, 1], 0).astype(np.float64)  # finite values
            has = filled & (n > 0)
            w = np.where(has, n, 0.0)
            out = np.unique(rows)
            at = np.searchsorted(out, rows)
            total = np.zeros(len(out))
            np.add.at(total, at, w)
            wsum = np.zeros(len(out))
            np.add.at(wsum, at, np.where(has, w * mean, 0.0))
            mu = wsum / total
            m2 = np.zeros(len(out))
            np.add.at(m2, at, np.where(has, w * (np.square(std) + np.square(mean - mu[at])), 0.0))
            sq = np.zeros(len(out))
            np.add.at(sq, at, np.where(has, np.square(norm), 0.0))
            lo, hi, amax = np.full(len(out), np.inf), np.full(len(out), -np.inf), np.full(len(out), -np.inf)
            np.minimum.at(lo, at, np.where(has, f[:, 2], np.inf))
            np.maximum.at(hi, at, np.where(has, f[:, 3], -np.inf))
            np.maximum.at(amax, at, np.where(has, f[:, 5], -np.inf))
            counts = np.zeros((len(out), 3), np.int64)
            np.add.at(counts, at, np.where(filled[:, None], c[:, :3], 0))
            every = np.ones(len(out), bool)
            np.logical_and.at(every, at, filled)
            some = total > 0
            floats = np.stack([mu, np.sqrt(m2 / total), lo, hi, np.sqrt(sq), amax], axis=1)
            floats[~some] = np.nan  # no finite value anywhere: nothing to describe
        table._floats[out] = floats
        table._counts[out, :3] = counts
        table._counts[out, 3] = 0  # combined in float64, unscaled
        table._filled[out] = every
        exact: dict[int, tuple[int, int]] = {}
        for p, row in zip(src.tolist(), rows.tolist()):
            if p in parts.errors and row not in table.errors:
                table.errors[row] = parts.errors[p]
            if p in parts._exact:
                a, b = parts._exact[p]
                lo_, hi_ = exact.get(row, (a, b))
                exact[row] = (min(lo_, a), max(hi_, b))
        table._exact.update(exact)


def _part_ref(
    x: Any, k: int | tuple[tuple[int, ...], tuple[int, ...], jax.sharding.Sharding] | str | None
) -> Callable[[], Any]:
    try:
        ref = weakref.ref(x)
    except TypeError:  # a host value: held (it is small and the caller's)
        return lambda: x
    if k is None or k is STACK:  # a stack's other slots are never asked for (one call per stack)
        return ref

    def part() -> Any:
        array = ref()
        if array is None:
            return None
        if isinstance(k, tuple):
            return stacked_array(array, *k)
        try:
            return array.addressable_data(k)
        except RuntimeError:  # deleted meanwhile: the array itself, whose kernel says so
            return array

    return part


def _layer_range(index: slice | int, count: int) -> tuple[int, int]:
    """The layers ``[first, stop)`` a shard holds on the layer axis (its index there: a slice)."""
    if isinstance(index, slice):
        first, stop, _ = index.indices(count)
        return first, stop
    return int(index), int(index) + 1
