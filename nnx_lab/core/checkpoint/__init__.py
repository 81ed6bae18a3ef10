"""Orbax checkpoints as a source: the tree from metadata (no restore), arrays streamed block by block
within a bound on host memory (docs/guide/compare.md, "The memory bound"). ``checkpoint_rows`` gives
``snapshot(path)`` its rows as plain data (``core.snapshot`` builds the Snapshot: this package does
not import it).
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
