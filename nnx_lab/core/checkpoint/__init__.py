"""Orbax checkpoints as a source: the tree from metadata (no restore), arrays streamed block by block.

- :func:`read_tree` (``_metadata.py``): each array's path (as in the model), shape, dtype, sharding,
  and the directory's bytes on disk; :class:`CheckpointError` for a path that is not a checkpoint.
- :func:`open_array` / :func:`read_blocks` (``_stream.py``): tensorstore reads of whole stored chunks,
  a few in flight, within ``3 * max(chunk_bytes, stored chunk)`` (:data:`CHUNK_BYTES`): bounded host memory;
  :func:`pieces` (a block reduced in pieces), :func:`whole_chunk_note` (a stored chunk read whole).
- :class:`Progress` / :class:`NotebookProgress` (``_progress.py``): ``checkpoint_rows(progress=...)``'s
  reports while statistics stream; a notebook line updated in place by default.
- :func:`checkpoint_rows` (``_snapshot.py``): the rows ``nnx_lab.snapshot("path")`` shows (as plain
  data: ``core.snapshot`` builds its Snapshot from them; this package does not import it).
"""

from ._metadata import (
    CheckpointError,
    CheckpointTree,
    read_tree,
)
from ._progress import NotebookProgress, Progress, auto_progress, in_notebook
from ._snapshot import checkpoint_rows, numeric_dtype
from ._stream import (
    CHUNK_BYTES,
    MAX_IN_FLIGHT,
    blocks,
    open_array,
    pieces,
    read_blocks,
    read_plan,
    whole_chunk_note,
)

__all__ = [
    "CHUNK_BYTES",
    "MAX_IN_FLIGHT",
    "CheckpointError",
    "CheckpointTree",
    "auto_progress",
    "blocks",
    "checkpoint_rows",
    "in_notebook",
    "NotebookProgress",
    "numeric_dtype",
    "open_array",
    "pieces",
    "Progress",
    "read_blocks",
    "read_plan",
    "read_tree",
    "whole_chunk_note",
]
