"""Reading a checkpoint's arrays block by block through tensorstore, with bounded host memory.

A block is a run of whole stored chunks (the unit tensorstore reads and decodes) of at most a
quarter of ``chunk_bytes``, or one stored chunk where a chunk alone is larger; the caller reduces a
block in pieces (:func:`pieces`). Up to :data:`MAX_IN_FLIGHT` blocks are read at once, as many as
keep ``3 * max(chunk_bytes, stored chunk)`` (:func:`read_plan`; why that bound, and what a stored
chunk costs: docs/guide/compare.md, "The memory bound").
"""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ._metadata import CheckpointEntry, CheckpointTree, spec

if TYPE_CHECKING:
    import tensorstore as ts

__all__ = [
    "CHUNK_BYTES",
    "MAX_IN_FLIGHT",
    "blocks",
    "open_array",
    "pieces",
    "read_blocks",
    "read_plan",
    "spec",
    "whole_chunk_note",
]

#: Default bound of one stream: at most 3 * CHUNK_BYTES of array data held (see the module's docstring).
CHUNK_BYTES = 32 * 2**20
#: Most block reads in flight: more buys nothing on a few cores, and OCDBT reads issued many at once
#: were measured 10x slower than 2-4 at a time.
MAX_IN_FLIGHT = 4


def open_array(tree: CheckpointTree, entry: CheckpointEntry) -> ts.TensorStore:
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


def read_plan(
    shape: tuple[int, ...],
    itemsize: int,
    chunk_bytes: int,
    stored: tuple[int, ...] | None = None,
    reducing: int = 0,
    streams: int = 1,
) -> tuple[int, int]:
    """``(block_bytes, in_flight)`` of a stream: blocks of a quarter of ``chunk_bytes`` (whole stored
    chunks, at least one), and as many reads in flight (none: each block read when asked) as keep
    ``2 * in_flight * block_bytes`` (a read holds the stored bytes and the decoded block) beside the
    caller's block and the device copies of ``1 + reducing`` pieces (:func:`pieces`) within
    ``3 * max(chunk_bytes, stored chunk) / streams`` (``streams``: how many read side by side, the
    two of a compared pair).

    >>> read_plan((1024, 1024), 4, 4 * 2**20, (256, 1024))  # 1 MiB stored chunks, 4 MiB bound
    (1048576, 4)
    >>> read_plan((1024, 1024), 4, 4 * 2**20, (1024, 1024))  # one 4 MiB stored chunk: read when asked
    (4194304, 0)
    """
    first = next(iter(blocks(shape, itemsize, max(chunk_bytes // 4, 1), stored)), None)
    if first is None:
        return 0, 0
    # an index names the leading axes it cuts (a slice, or an int: one); the others are whole
    extents = (len(range(*s.indices(n))) if isinstance(s, slice) else 1 for s, n in zip(first, shape))
    block = math.prod(extents) * math.prod(shape[len(first) :]) * itemsize
    stored_bytes = math.prod(min(c, n) for c, n in zip(stored, shape)) * itemsize if stored else 0
    bound = 3 * max(chunk_bytes, stored_bytes, block)
    held = block + (1 + reducing) * min(block, max(chunk_bytes // 4, itemsize))
    return block, max(0, min(MAX_IN_FLIGHT, (bound // max(streams, 1) - held) // max(2 * block, 1)))


def pieces(block: np.ndarray, chunk_bytes: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(flat offset, piece)``: the block flat, in views of at most a quarter of ``chunk_bytes``
    (one, the block itself, when it is that small; an empty block is one empty piece).

    >>> [(s, p.tolist()) for s, p in pieces(np.arange(6, dtype=np.float32).reshape(2, 3), 64)]
    [(0, [0.0, 1.0, 2.0, 3.0]), (4, [4.0, 5.0])]
    """
    flat = block.reshape(-1)
    step = max(1, chunk_bytes // 4 // max(block.itemsize, 1))
    if flat.size <= step:
        yield 0, flat
        return
    for start in range(0, flat.size, step):
        yield start, flat[start : start + step]


def whole_chunk_note(
    shape: tuple[int, ...], itemsize: int, stored: tuple[int, ...] | None, chunk_bytes: int
) -> str | None:
    """What a row says where the stored chunk, not ``chunk_bytes``, sets the memory bound (tensorstore
    decodes a stored chunk whole): None where it does not.

    >>> whole_chunk_note((51200, 1024), 4, (51200, 1024), 32 * 2**20)
    'stored as one 200.0 MiB chunk: read whole (chunk_bytes cannot split it; save with ocp.SaveArgs(chunk_byte_size=...))'
    """
    from ..render import format_bytes

    if not stored or len(stored) != len(shape):
        return None
    chunk = tuple(min(c, n) for c, n in zip(stored, shape))
    nbytes = math.prod(chunk) * itemsize
    if nbytes <= chunk_bytes:
        return None
    what = "as one" if chunk == tuple(shape) else "in"
    return (
        f"stored {what} {format_bytes(nbytes)} chunk{'' if what == 'as one' else 's'}: read whole "
        "(chunk_bytes cannot split it; save with ocp.SaveArgs(chunk_byte_size=...))"
    )


def read_blocks(
    arr: ts.TensorStore,
    shape: tuple[int, ...],
    itemsize: int,
    chunk_bytes: int,
    stored: tuple[int, ...] | None = None,
    reducing: int = 0,
    streams: int = 1,
) -> Iterator[tuple[tuple, np.ndarray]]:
    """``(index, block)`` for every block in C order, the next reads in flight while the caller
    handles one (:func:`read_plan`: the block size and how many reads, within the bound; ``reducing``:
    how many earlier pieces the caller's device still holds; ``streams``: how many streams share the
    bound)."""
    _, in_flight = read_plan(shape, itemsize, chunk_bytes, stored, reducing, streams)
    pending: collections.deque = collections.deque()
    for index in blocks(shape, itemsize, max(chunk_bytes // 4, 1), stored):
        pending.append((index, arr[index].read()))  # decoded in tensorstore's threads meanwhile
        if len(pending) > in_flight:  # in_flight reads go on while the caller holds this block
            done_index, done = pending.popleft()
            yield done_index, np.asarray(done.result())
    while pending:
        done_index, done = pending.popleft()
        yield done_index, np.asarray(done.result())
