"""Orbax checkpoints as a source: the tree from metadata (no restore), arrays streamed block by block.

- :func:`read_tree` (``_metadata.py``): each array's path (as in the model), shape, dtype, sharding,
  and the directory's bytes on disk; :class:`CheckpointError` for a path that is not a checkpoint.
- :func:`open_array` / :func:`read_blocks` (``_stream.py``): tensorstore reads of at most
  ``chunk_bytes`` (:data:`CHUNK_BYTES`) with one read in flight: bounded host memory.
- :func:`checkpoint_rows` (``_snapshot.py``): the rows ``nnx_lab.snapshot("path")`` shows (as plain
  data: ``core.snapshot`` builds its Snapshot from them; this package does not import it).
"""

from ._metadata import (
    CheckpointEntry,
    CheckpointError,
    CheckpointTree,
    is_checkpoint_path,
    read_tree,
)
from ._snapshot import CheckpointRows, array_stats, checkpoint_rows
from ._stream import CHUNK_BYTES, blocks, open_array, read_blocks

__all__ = [
    "CHUNK_BYTES",
    "CheckpointEntry",
    "CheckpointError",
    "CheckpointTree",
    "CheckpointRows",
    "array_stats",
    "blocks",
    "checkpoint_rows",
    "is_checkpoint_path",
    "open_array",
    "read_blocks",
    "read_tree",
]
