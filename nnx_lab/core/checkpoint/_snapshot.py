"""A checkpoint as a snapshot: rows from its metadata at once, statistics (the snapshot's) streamed
block by block, each block reduced on the default device (``_blocks.py``: float32 partials) and the
blocks combined on the host in float64 (Chan's parallel mean/variance). A row whose data cannot be
read says why (status ``error``) and the others go on.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..text import first_line
from ._blocks import block_stats
from ._metadata import CheckpointEntry, CheckpointTree, read_tree
from ._progress import Progress, auto_progress
from ._stream import CHUNK_BYTES, open_array, pieces, read_blocks, whole_chunk_note

if TYPE_CHECKING:
    import os

    import tensorstore as ts

__all__ = ["CheckpointRows", "array_stats", "checkpoint_rows", "numeric_dtype"]

_log = logging.getLogger("nnx_lab")


class _Moments:
    """The blocks' partials combined on the host in float64 (Chan et al.: count, mean and M2 without
    cancellation; min, max; NaN, Inf and zero counts)."""

    def __init__(self):
        self.n = self.mean = self.m2 = 0.0
        self.mn, self.mx = math.inf, -math.inf
        self.nan = self.inf = self.zeros = 0

    def add(self, floats: np.ndarray, ints: np.ndarray | tuple[int, int, int, int]) -> None:
        bn, bnan, binf, bzero = (int(v) for v in ints)
        bmean, bm2, bmin, bmax = (float(v) for v in floats)
        if bn:
            total = self.n + bn
            delta = bmean - self.mean
            self.mean += delta * bn / total
            self.m2 += bm2 + delta * delta * self.n * bn / total
            self.n = total
            self.mn, self.mx = min(self.mn, bmin), max(self.mx, bmax)
        self.nan, self.inf, self.zeros = self.nan + bnan, self.inf + binf, self.zeros + bzero

    def stats(self, size: int | None) -> dict:
        n, mean, m2, mn, mx = self.n, self.mean, self.m2, self.mn, self.mx
        has = n > 0
        return {
            "mean": mean if has else math.nan,
            "std": math.sqrt(m2 / n) if has else math.nan,
            "min": mn if has else math.nan,
            "max": mx if has else math.nan,
            "norm": math.sqrt(m2 + n * mean * mean) if has else math.nan,
            "abs_max": max(abs(mn), abs(mx)) if has else math.nan,
            "nan_count": self.nan,
            "inf_count": self.inf,
            "zero_frac": self.zeros / max(size or 0, 1),
        }


def array_stats(
    arr: ts.TensorStore,
    entry: CheckpointEntry,
    chunk_bytes: int = CHUNK_BYTES,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """The snapshot statistics of one stored array, read block by block and reduced piece by piece
    (``pieces``: a device copy is never a whole stored chunk); a piece's kernel runs while the next
    is launched (one ahead: ``read_blocks(..., reducing=1)`` keeps the bound)."""
    import jax

    platform = jax.devices()[0].platform  # a numpy block goes to the default device
    itemsize = np.dtype(entry.dtype).itemsize
    moments = _Moments()
    launched: collections.deque = collections.deque()

    def combine() -> None:
        piece, out = launched.popleft()
        floats, zeros = jax.device_get(out)
        ints = (piece.size, 0, 0, zeros)  # every value finite, as the fast kernel assumed
        if not np.isfinite(floats).all():  # a NaN or Inf (or a square past float32): the exact kernel
            floats, ints = jax.device_get(block_stats(platform, piece, exact=True))
        moments.add(floats, ints)

    for _, block in read_blocks(arr, entry.array_shape, itemsize, chunk_bytes, entry.chunk_shape, reducing=1):
        for _, piece in pieces(block, chunk_bytes):
            launched.append((piece, block_stats(platform, piece)))
            if len(launched) > 1:
                combine()
        while launched:  # no piece keeps this block alive while the next is read
            combine()
        if progress is not None:
            progress(block.nbytes)
        del block, piece
    return moments.stats(entry.size)


def key_view(impl: str, stored: tuple[int, ...]) -> tuple[tuple[int, ...], str] | None:
    """A PRNG key saved as its key data: the keys' shape and dtype text (``()``, ``key<fry>``), as a
    live key array's row says them; None for an impl jax does not know."""
    import jax

    try:
        dtype = jax.eval_shape(lambda: jax.random.key(0, impl=impl)).dtype
        data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct((), dtype)).shape
    except Exception:  # noqa: BLE001 - boundary: a checkpoint's impl name this jax does not have
        _log.info("nnx_lab: unknown PRNG key impl %r in a checkpoint", impl, exc_info=True)
        return None
    n = len(data)
    if tuple(stored[len(stored) - n :]) != tuple(data):
        return None
    return tuple(stored[: len(stored) - n]), str(dtype)


def _row(
    entry: CheckpointEntry,
    status: str,
    stats: dict | None,
    note: str | None,
    key: tuple[tuple[int, ...], str] | None = None,
) -> dict:
    """A snapshot Row's fields (``core.snapshot.Row(**row)``): plain data, so that this package does
    not import the snapshot package, which imports it for ``snapshot(path)``. ``key``: a PRNG key's
    :func:`key_view`, its row's shape and dtype (as a live key array's)."""
    shape, dtype, size = entry.shape, entry.dtype, entry.size
    if key is not None:
        shape, dtype = key
        size = math.prod(shape)
    return dict(
        path=entry.path,
        type="Array",
        shape=shape,
        dtype=dtype,
        size=size,
        nbytes=entry.nbytes,
        sharding=entry.sharding,
        devices="checkpoint",
        metadata=None,
        aliases=(),
        status=status,
        stats=stats,
        note=note,
    )


@dataclasses.dataclass(frozen=True)
class CheckpointRows:
    """What ``snapshot(path)`` is made of: Row fields, containers, totals, and the checkpoint's
    directory and bytes on disk (``Snapshot.checkpoint``)."""

    rows: list[dict]
    nodes: dict
    totals: dict
    info: dict
    elapsed_s: float


def numeric_dtype(dtype: str | None) -> bool:
    """Whether a stored dtype (its text) is a number or bool array's: read and compared; not complex."""
    try:
        return dtype is not None and np.dtype(dtype).kind in "biuf" or str(dtype) == "bfloat16"
    except TypeError:
        return False


def checkpoint_rows(
    path: str | os.PathLike[str],
    *,
    stats: bool = True,
    layers: object = None,
    chunk_bytes: int = CHUNK_BYTES,
    progress: Callable[[Progress], None] | bool | None = None,
) -> CheckpointRows:
    """The rows of an Orbax checkpoint directory (see the module): what ``snapshot(path)`` shows.

    ``progress(Progress)`` is called after each block while statistics stream and once at the end
    (``Progress.done``); ``None`` shows a line updated in place when in a notebook and streaming
    lasts (``_progress.py``), ``False`` nothing.
    """
    if layers:
        raise TypeError(
            "layers= is not supported for a checkpoint path (it has no flax metadata to name the axis); "
            "snapshot the restored model instead"
        )
    start = time.perf_counter()
    report = [auto_progress(progress)]
    tree: CheckpointTree = read_tree(path)
    keys = {  # a PRNG key saved as its key data, by entry: its key_view
        id(e): view
        for e in tree.entries
        if e.note is None and e.key_impl and (view := key_view(e.key_impl, e.array_shape)) is not None
    }
    streamed = [e for e in tree.entries if stats and e.note is None and numeric_dtype(e.dtype) and id(e) not in keys]
    total = sum(e.nbytes or 0 for e in streamed)
    done = [0, 0]  # bytes, arrays

    def tell(finished: bool = False) -> None:
        if report[0] is None:
            return
        try:
            report[0](Progress(done[1], len(streamed), done[0], total, time.perf_counter() - start, finished))
        except Exception:  # noqa: BLE001 - boundary: a failing display must not mark the array corrupt
            _log.warning("nnx_lab: the checkpoint progress display failed; no more progress shown", exc_info=True)
            report[0] = None

    def tick(nbytes: int) -> None:
        done[0] += nbytes
        tell()

    rows = []
    for entry in tree.entries:
        if entry.note is not None:
            rows.append(_row(entry, "error", None, entry.note))
        elif id(entry) in keys:  # a PRNG key saved as its key data: a key, no statistics (as a live one)
            rows.append(_row(entry, "prng_key", None, None, keys[id(entry)]))
        elif not stats:
            rows.append(_row(entry, "abstract", None, "not read (stats=False)"))
        elif not numeric_dtype(entry.dtype):
            rows.append(_row(entry, "non_numeric", None, f"dtype {entry.dtype}: no statistics"))
        else:
            try:
                itemsize = np.dtype(entry.dtype).itemsize
                note = whole_chunk_note(entry.array_shape, itemsize, entry.chunk_shape, chunk_bytes)
                rows.append(_row(entry, "ok", array_stats(open_array(tree, entry), entry, chunk_bytes, tick), note))
            except Exception as e:  # noqa: BLE001 - boundary: a missing or corrupt array is its row's status
                _log.info("nnx_lab: reading %s from %s failed", entry.name, tree.directory, exc_info=True)
                rows.append(
                    _row(
                        entry,
                        "error",
                        None,
                        f"missing or corrupt data: {type(e).__name__}: {first_line(str(e), 200)}",
                    )
                )
            done[1] += 1
    if streamed:
        tell(finished=True)
    totals = {
        "Array": {
            "count": len(rows),
            "size": sum(r["size"] or 0 for r in rows),
            "bytes": sum(r["nbytes"] or 0 for r in rows),
        }
    }
    totals["all"] = dict(totals["Array"])
    nodes = {e.path[:i]: "dict" for e in tree.entries for i in range(1, len(e.path))}
    info = {"directory": tree.directory, "disk_bytes": tree.disk_bytes, "ocdbt": tree.use_ocdbt}
    return CheckpointRows(rows, nodes, totals, info, time.perf_counter() - start)
