"""The value comparison: per pair of arrays a few sums, reduced where the arrays live.

The programs (``_placement.plan_programs``) return, per run of at most 4096 elements of every pair
(or layer), float32 ``[sum (a-b)^2, sum a^2, sum b^2, sum a*b, max |a-b|]`` and int32 ``[changed
beyond tol (and not bit-identical), not bit-identical, NaN in a, NaN in b]``: 36 bytes per 4096
elements, fetched once and summed per pair on the host in float64 (no per-pair tail in the program:
it compiled 1.3-2.7x slower). No array comes to the host; a checkpoint's arrays are streamed block by
block against the same block of the other side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._fastmath import ReductionJit, run_width
from ._placement import key_data, placed_pair, plan_programs

__all__ = ["FLOATS", "INTS", "Partials", "device_partials", "launch_partials", "stream_partials"]

FLOATS = ("diff_sq", "a_sq", "b_sq", "ab", "max_abs")
INTS = ("changed", "differ", "nan_a", "nan_b")
_UINT = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}


class Partials:
    """Sums of one pair (or one layer), combinable: blocks of a stream, rows of a module."""

    __slots__ = ("floats", "ints", "size")

    def __init__(self, floats: Sequence[float], ints: Sequence[int], size: int):
        self.floats, self.ints, self.size = (
            [float(v) for v in floats],
            [int(v) for v in ints],
            int(size),
        )
        if math.isnan(self.floats[0]):  # a NaN difference: max |a-b| is NaN (a CPU max may skip it: _fastmath)
            self.floats[4] = math.nan

    @classmethod
    def empty(cls) -> Partials:
        new = cls.__new__(cls)  # no conversions: module aggregates make hundreds per compare()
        new.floats, new.ints, new.size = [0.0, 0.0, 0.0, 0.0, 0.0], [0, 0, 0, 0], 0
        return new

    def add(self, other: Partials) -> None:
        for i in range(4):
            self.floats[i] += other.floats[i]
        m, o = self.floats[4], other.floats[4]
        self.floats[4] = o if math.isnan(o) or o > m else m
        for i in range(4):
            self.ints[i] += other.ints[i]
        self.size += other.size

    def metrics(self) -> dict:
        diff_sq, a_sq, b_sq, ab, max_abs = self.floats
        changed, differ, nan_a, nan_b = self.ints
        if a_sq > 0:
            rel = math.sqrt(diff_sq) / math.sqrt(a_sq)
        else:
            rel = 0.0 if diff_sq == 0 else math.inf
        cosine = ab / math.sqrt(a_sq * b_sq) if a_sq > 0 and b_sq > 0 else None
        if cosine is not None and not math.isnan(cosine):
            cosine = max(-1.0, min(1.0, cosine))
        return {
            "rel_change": rel,
            "max_abs": max_abs,
            "cosine": cosine,
            "frac_changed": changed / self.size if self.size else 0.0,
            "identical": differ == 0,
            "changed": changed,
            "nan_a": nan_a,
            "nan_b": nan_b,
        }


def _bits_differ(a, b):
    if a.dtype != b.dtype:  # never bit-identical; "changed" still asks whether the values differ
        return jnp.ones(a.shape, jnp.bool_)
    if a.dtype == jnp.bool_ or jnp.issubdtype(a.dtype, jnp.integer):
        return a != b
    u = _UINT[a.dtype.itemsize]
    return lax.bitcast_convert_type(a, u) != lax.bitcast_convert_type(b, u)


def _add_max(p, q):
    return tuple(lax.max(x, y) if k == 4 else x + y for k, (x, y) in enumerate(zip(p, q)))


def _runs(a, b, axis, tol):
    """Nine ``[L * R]`` arrays, a partial per run of at most 4096 elements of each layer (L = 1, or
    the layers along ``axis``): float32 sum (a-b)^2, a^2, b^2, a*b, max |a-b|; int32 counts.

    One pass over both arrays: XLA's variadic reduce computes every sum of a run in one loop (nine
    separate reductions read the data nine times on a CPU: 10x slower). The runs' partials are summed
    on the host (float64): a program with no per-pair tail compiles several times faster."""
    differ = _bits_differ(a, b)
    af, bf = a.astype(jnp.float32), b.astype(jnp.float32)
    if axis is not None:
        af, bf, differ = (jnp.moveaxis(x, axis, 0) for x in (af, bf, differ))
    n = 1 if axis is None else a.shape[axis]
    m = a.size // n if n else 0
    w = run_width(m)
    af, bf, differ = (x.reshape(n, m // w if w else 0, w) for x in (af, bf, differ))
    d = af - bf
    absd = jnp.abs(d)
    # NaN beside a number is changed (|d| <= tol is False); bit-identical elements never are
    ops = (
        d * d,
        af * af,
        bf * bf,
        af * bf,
        absd,
        (~(absd <= tol) & differ).astype(jnp.int32),
        differ.astype(jnp.int32),
        jnp.isnan(af).astype(jnp.int32),
        jnp.isnan(bf).astype(jnp.int32),
    )
    init = tuple(jnp.zeros((), o.dtype) for o in ops)
    return [p.reshape(-1) for p in lax.reduce(ops, init, _add_max, (2,))]


def _run_count(shape: tuple[int, ...], axis: int | None) -> tuple[int, int]:
    """``(layers, runs per layer)`` of :func:`_runs`."""
    size = math.prod(shape)
    n = 1 if axis is None else shape[axis]
    m = size // n if n else 0
    w = run_width(m)
    return n, (m // w if w else 0)


def _program_fn(a_arrays, b_arrays, layout, tol):
    """The batches of one program (``layout``: per batch ``(pairs, stacked, layer axis)``, its
    arrays in order in ``a_arrays`` and ``b_arrays``): ``[5, R]`` floats and ``[4, R]`` ints, the runs
    of every pair (and layer) side by side in order. A stacked batch's pairs are stacked and reduced
    by one vmapped kernel (one kernel to compile, not one per pair)."""
    runs, at = [], 0
    for count, stacked, axis in layout:
        a, b = a_arrays[at : at + count], b_arrays[at : at + count]
        at += count
        if stacked:
            out = jax.vmap(lambda x, y, axis=axis: tuple(_runs(x, y, axis, tol)))(jnp.stack(a), jnp.stack(b))
            runs.append([o.reshape(-1) for o in out])
        else:
            runs.extend(_runs(x, y, axis, tol) for x, y in zip(a, b))
    floats = jnp.stack([jnp.concatenate([r[k] for r in runs]) for k in range(5)])
    ints = jnp.stack([jnp.concatenate([r[k] for r in runs]) for k in range(5, 9)])
    return floats, ints


def _sum_runs(floats: np.ndarray, ints: np.ndarray, counts: Sequence[int]) -> list[tuple[list, list]]:
    """Per segment of ``counts`` runs: its float sums (float64) and max, and its int counts."""
    starts = np.cumsum([0, *counts[:-1]]).astype(np.int64)
    nonempty = np.asarray(counts) > 0
    out = [([0.0] * 5, [0] * 4) for _ in counts]
    if not nonempty.any():
        return out
    at = starts[nonempty]  # reduceat of an empty segment would give the next run: left out
    f = floats.astype(np.float64)
    sums = np.add.reduceat(f[:4], at, axis=1)
    maxes = np.maximum.reduceat(f[4], at)
    counted = np.add.reduceat(ints.astype(np.int64), at, axis=1)
    # as Python numbers at once (one conversion per array, not one per element read)
    for k, s, m, c in zip(np.flatnonzero(nonempty).tolist(), sums.T.tolist(), maxes.tolist(), counted.T.tolist()):
        out[k] = ([*s, m], c)
    return out


def _pair(a, b, axis, tol):
    """``[L, 5]`` floats and ``[L, 4]`` ints of one pair (a streamed block: L = 1)."""
    parts = _runs(a, b, axis, tol)
    n = 1 if axis is None else a.shape[axis]
    floats = jnp.stack([p.reshape(n, -1).sum(1) for p in parts[:4]] + [parts[4].reshape(n, -1).max(1, initial=0.0)], 1)
    ints = jnp.stack([p.reshape(n, -1).sum(1, dtype=jnp.int32) for p in parts[5:]], axis=1)
    return floats, ints


#: ``_program(platform, a_arrays, b_arrays, axes, tol)``: vectorized on CPU too (see ``core._fastmath``)
_program = ReductionJit(_program_fn, static_argnums=(2,))


def device_partials(pairs: Sequence[tuple[Any, Any, int | None]], tol: float) -> list[list[Partials]]:
    """Per pair ``(a, b, layer_axis)``: its Partials (one, or one per layer)."""
    return launch_partials(pairs, tol)()


def launch_partials(pairs: Sequence[tuple[Any, Any, int | None]], tol: float) -> Callable[[], list[list[Partials]]]:
    """Dispatch the programs of :func:`device_partials` and return at once; the function returned
    waits for them and gives their Partials (the caller's work meanwhile overlaps the device's)."""
    placed = []
    for a, b, axis in pairs:
        pa, pb = placed_pair(a, b)
        placed.append((pa, pb, axis))
    launched = []
    for batches in plan_programs(placed):  # launched all before any fetch: the devices work meanwhile
        members = [k for indices, _, _ in batches for k in indices]
        a_arrays = tuple(placed[k][0] for k in members)
        b_arrays = tuple(placed[k][1] for k in members)
        layout = tuple((len(indices), stacked, placed[indices[0]][2]) for indices, _, stacked in batches)
        platform = _platform(a_arrays[0])
        launched.append((batches, _program(platform, a_arrays, b_arrays, layout, jnp.float32(tol))))

    def fetch() -> list[list[Partials]]:
        out: list[list[Partials]] = [[] for _ in pairs]
        results = jax.device_get([result for _, result in launched])  # one fetch for every program
        for (batches, _), (floats, ints) in zip(launched, results):
            members = [(j < real, k) for indices, real, _ in batches for j, k in enumerate(indices)]
            runs = [_run_count(placed[k][0].shape, placed[k][2]) for _, k in members]  # (layers, runs per layer)
            sums = iter(_sum_runs(floats, ints, [r for n, r in runs for _ in range(n)]))
            for (real, k), (n, _) in zip(members, runs):
                parts = [Partials(*next(sums), placed[k][0].size // n if n else 0) for _ in range(n)]
                if real:  # a stacked batch's padding is dropped
                    out[k] = parts
        return out

    return fetch


_block = ReductionJit(lambda a, b, tol: _pair(a, b, None, tol))  # _block(platform, a, b, tol)


def _live_piece_fn(live, piece, start, tol, flip):
    """A piece of a stored block against the same elements of the live array (its flat ``start``):
    sliced inside the program, where it costs no copy of the live array."""
    part = lax.dynamic_slice(live.reshape(-1), (start,), (piece.size,))
    return _pair(piece, part, None, tol) if flip else _pair(part, piece, None, tol)


_live_piece = ReductionJit(_live_piece_fn, static_argnums=(4,))  # _live_piece(platform, live, piece, start, tol, flip)


def _platform(x: jax.Array) -> str:
    return next(iter(x.sharding.device_set)).platform


def _flat_start(index: tuple, shape: tuple[int, ...]) -> int | None:
    """The flat offset of a block (``index``: ints and slices of the leading axes) where its elements
    are contiguous in C order, else None."""
    starts, extents = [], []
    for k, n in enumerate(shape):
        e = index[k] if k < len(index) else slice(None)
        if isinstance(e, slice):
            start, stop, _ = e.indices(n)
            starts.append(start)
            extents.append(max(stop - start, 0))
        else:
            starts.append(int(e))
            extents.append(1)
    cut = next((k for k, m in enumerate(extents) if m > 1), len(shape))
    if any(extents[k] != shape[k] for k in range(cut + 1, len(shape))):
        return None
    return sum(s * math.prod(shape[k + 1 :]) for k, s in enumerate(starts))


def stream_partials(
    a_source: Any,
    b_source: Any,
    shape: tuple[int, ...],
    itemsize: int,
    chunk_bytes: int,
    tol: float,
    stored_chunk: tuple[int, ...] | None = None,
) -> Partials:
    """One pair where one side or both are checkpoint arrays: block by block, summed on the host.

    A source is ``("array", jax_array)`` or ``("checkpoint", tensorstore)``; blocks are read with
    ``core.checkpoint.read_blocks`` (two checkpoints: two streams sharing the bound) and reduced in
    pieces (``core.checkpoint.pieces``: no device copy of a whole stored chunk); a live side is
    sliced inside the program, on its device.
    """
    from ..checkpoint import pieces, read_blocks

    total = Partials.empty()
    tol = jnp.float32(tol)
    launched: list = []  # one piece's kernel runs while the next is launched

    def launch(result: Any, size: int) -> None:
        launched.append((result, size))
        if len(launched) > 1:
            drain(1)

    def drain(keep: int = 0) -> None:
        while len(launched) > keep:
            result, size = launched.pop(0)
            f, i = jax.device_get(result)
            total.add(Partials(f[0], i[0], size))

    if a_source[0] == "checkpoint" and b_source[0] == "checkpoint":
        platform = jax.devices()[0].platform  # numpy blocks go to the default device
        a_reads = read_blocks(a_source[1], shape, itemsize, chunk_bytes, stored_chunk, reducing=1, streams=2)
        b_reads = read_blocks(b_source[1], shape, itemsize, chunk_bytes, stored_chunk, reducing=1, streams=2)
        for (_, a_block), (_, b_block) in zip(a_reads, b_reads):
            for (_, a_piece), (_, b_piece) in zip(pieces(a_block, chunk_bytes), pieces(b_block, chunk_bytes)):
                launch(_block(platform, a_piece, b_piece, tol), a_piece.size)
            drain()  # no piece keeps these blocks alive while the next are read
        return total
    flip = a_source[0] == "checkpoint"
    stored, live = (a_source[1], b_source[1]) if flip else (b_source[1], a_source[1])
    live = key_data(live if isinstance(live, jax.Array) else jnp.asarray(live))
    platform = _platform(live)
    for index, block in read_blocks(stored, shape, itemsize, chunk_bytes, stored_chunk, reducing=1):
        start = _flat_start(index, shape) if live.size < 2**31 else None  # an int32 offset
        part = live if start is not None else live[index]  # a block not contiguous: its own copy
        for at, piece in pieces(block, chunk_bytes):  # a numpy piece goes where the live array is
            launch(_live_piece(platform, part, piece, jnp.int32((start or 0) + at), tol, flip), piece.size)
        drain()
        del part
    return total
