"""History of statistics across refreshes: a fixed-size ring per row, on the host.

Only the numbers a snapshot already brought back are kept (no array data), in a
preallocated float32 buffer, so any number of refreshes uses the same memory.

>>> from flax import nnx
>>> import nnx_lab
>>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
>>> h = History(capacity=3)
>>> for _ in range(5):
...     h.append(nnx_lab.snapshot(model))
>>> h.series("norm").shape, h.length
((2, 3), 3)
"""

from __future__ import annotations

import numpy as np

from ..snapshot import PRECISION, Snapshot, round_significant
from ..stats import STAT_NAMES

#: Statistics the history keeps (the floating ones a sparkline can show).
HISTORY_STATS = ("mean", "std", "min", "max", "norm", "abs_max")
_COLUMNS = [STAT_NAMES.index(name) for name in HISTORY_STATS]


class History:
    def __init__(self, capacity: int = 100):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.structure = 0  # bumped whenever the rows of the snapshots change
        self._paths: tuple | None = None
        self._buffer = np.full((0, len(HISTORY_STATS), capacity), np.nan, np.float32)
        self._next = 0  # ring position of the next write
        self.length = 0  # how many refreshes are stored (<= capacity)

    def append(self, snap: Snapshot) -> None:
        paths = snap.paths
        if paths != self._paths:
            self._paths = paths
            self.structure += 1
            self._buffer = np.full((len(paths), len(HISTORY_STATS), self.capacity), np.nan, np.float32)
            self._next = self.length = 0
        values = snap.stat_matrix[:, _COLUMNS]
        # The same rounding as the payload, so a sparkline never mixes two precisions. A value beyond
        # float32's range (the norm of Gemma's sown logits, masked at -2.38e38) is stored as +-inf, as
        # the front end's float32 ring holds it: a gap in the sparkline, never a warning in the cell.
        with np.errstate(over="ignore"):
            self._buffer[:, :, self._next] = round_significant(values, PRECISION)
        self._next = (self._next + 1) % self.capacity
        self.length = min(self.length + 1, self.capacity)

    def series(self, stat: str) -> np.ndarray:
        """``float32[n_rows, length]``: each row's last ``length`` values of ``stat``, oldest first."""
        if stat not in HISTORY_STATS:
            raise ValueError(f"no history for {stat!r}; choose one of {', '.join(HISTORY_STATS)}")
        j = HISTORY_STATS.index(stat)
        order = (np.arange(self.length) + self._next - self.length) % self.capacity
        return np.ascontiguousarray(self._buffer[:, j, order])
