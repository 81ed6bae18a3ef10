"""Reading a checkpoint's arrays block by block through tensorstore, with bounded host memory.

A block is a run of whole stored chunks (the unit tensorstore reads and decodes) of at most
``chunk_bytes`` (default :data:`CHUNK_BYTES`), or one stored chunk where a chunk alone is larger.
The next block is read while the current one is reduced, so a stream holds at most two blocks on
the host, plus, on the CPU backend, the device's copy of the one being reduced: the bound is
``3 * max(chunk_bytes, stored chunk)`` of array data per stream, whatever the array's size.
Orbax stores one chunk per array (per shard) unless saved with ``ocp.SaveArgs(chunk_byte_size=...)``:
a default checkpoint's bound is set by its largest array; one saved with ``chunk_byte_size`` streams
within ``3 * chunk_bytes``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._metadata import CheckpointEntry, CheckpointTree, spec

__all__ = ["CHUNK_BYTES", "blocks", "open_array", "read_blocks", "spec"]

#: Default most bytes of one block read from a checkpoint (see the module's docstring for the bound).
CHUNK_BYTES = 32 * 2**20


def open_array(tree: CheckpointTree, entry: CheckpointEntry) -> Any:
    """The tensorstore of one array (opening reads only its zarr metadata)."""
    import tensorstore as ts

    arr = ts.open(spec(tree.directory, entry.name, tree.use_ocdbt, tree.use_zarr3), read=True).result()
    if tuple(arr.shape) != entry.shape:
        raise ValueError(f"the stored array has shape {tuple(arr.shape)}, its metadata says {entry.shape}")
    return arr


def blocks(
    shape: tuple[int, ...], itemsize: int, chunk_bytes: int, stored: tuple[int, ...] | None = None
) -> Iterator[tuple]:
    """Index tuples covering ``shape`` in C order, each selecting at most ``chunk_bytes`` (or one
    element); with the ``stored`` chunk shape, runs of whole stored chunks (at least one).

    >>> [b for b in blocks((4, 3), 4, 24)]
    [(slice(0, 2, None),), (slice(2, 4, None),)]
    >>> len(list(blocks((2, 5), 4, 8)))
    6
    >>> [b for b in blocks((8, 3), 4, 24, stored=(3, 3))]
    [(slice(0, 3, None),), (slice(3, 6, None),), (slice(6, 8, None),)]
    """
    if stored is not None and len(stored) == len(shape) and shape and all(c > 0 for c in stored):
        yield from _stored_blocks(shape, itemsize, chunk_bytes, tuple(min(c, n) for c, n in zip(stored, shape)))
        return
    if not shape:
        yield ()
        return
    # The fewest leading axes to split so that the rest fits: axis k-1 is cut in ranges, the axes before it one by one.
    trailing = [math.prod(shape[k:]) * itemsize for k in range(len(shape) + 1)]
    k = next((k for k in range(len(shape) + 1) if trailing[k] <= chunk_bytes), len(shape))
    if k == 0:
        yield ()
        return
    step = max(1, chunk_bytes // max(trailing[k], 1))
    for lead in itertools.product(*(range(n) for n in shape[: k - 1])):
        for start in range(0, shape[k - 1], step):
            yield (*lead, slice(start, min(start + step, shape[k - 1])))


def _stored_blocks(shape: tuple[int, ...], itemsize: int, chunk_bytes: int, chunk: tuple[int, ...]) -> Iterator[tuple]:
    """Whole stored chunks: grouped along axis 0 when a chunk spans every other axis, else one by one."""
    if all(c >= n for c, n in zip(chunk[1:], shape[1:])):
        row = math.prod(shape[1:]) * itemsize
        step = max(chunk[0], (chunk_bytes // max(row * chunk[0], 1)) * chunk[0])
        for start in range(0, shape[0], step):
            yield (slice(start, min(start + step, shape[0])),)
        return
    grid = [range(0, n, c) for n, c in zip(shape, chunk)]
    for origin in itertools.product(*grid):
        yield tuple(slice(o, min(o + c, n)) for o, c, n in zip(origin, chunk, shape))


def read_blocks(
    arr: Any,
    shape: tuple[int, ...],
    itemsize: int,
    chunk_bytes: int,
    stored: tuple[int, ...] | None = None,
) -> Iterator[tuple[Any, np.ndarray]]:
    """``(index, block)`` for every block, the next read in flight while the caller handles one."""
    index_iter = iter(blocks(shape, itemsize, chunk_bytes, stored))
    first = next(index_iter, None)
    if first is None:
        return
    pending = (first, arr[first].read())
    for index in index_iter:
        future = arr[index].read()  # in flight while the caller reduces the previous block
        done_index, done = pending
        pending = (index, future)
        yield done_index, np.asarray(done.result())
    yield pending[0], np.asarray(pending[1].result())
