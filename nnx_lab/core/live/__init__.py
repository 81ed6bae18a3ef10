"""Live views: the refresh engine (``_engine.py``, its docstring the threading model), a view's target,
throttle, history, snapshots and status line; see docs/ARCHITECTURE.md."""

from ._engine import MAX_IN_FLIGHT, Pending, Refresher
from ._history import HISTORY_STATS, History
from ._snapshots import ONE_OFFS, SnapshotSource
from ._status import Forward, Listeners, StatusLine
from ._target import NameTarget, OptimizerSource, watch_target
from ._throttle import Throttle

__all__ = [
    "HISTORY_STATS",
    "MAX_IN_FLIGHT",
    "ONE_OFFS",
    "Forward",
    "History",
    "Listeners",
    "NameTarget",
    "OptimizerSource",
    "Pending",
    "Refresher",
    "SnapshotSource",
    "StatusLine",
    "Throttle",
    "watch_target",
]
