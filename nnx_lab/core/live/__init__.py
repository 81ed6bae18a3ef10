"""Live views: the refresh engine (``_engine.py``: the throttled in-flight queue, its threads and
the threading model, in its docstring), what a view refreshes: its target, resolved at every refresh (``_target.py``:
an object by weak reference, an ``nnx.split`` pair, or a followed name), the throttle
(``_throttle.py``), the history of refreshes (``_history.py``), a snapshot as the engine's work
(``_snapshots.py``) and the status line and listeners (``_status.py``). The
:class:`~nnx_lab.core.watcher.Watcher` composes these with the training parts."""

from ._engine import MAX_IN_FLIGHT, Pending, Refresher
from ._history import HISTORY_STATS, History
from ._snapshots import ONE_OFFS, SnapshotSource
from ._status import Forward, Listeners, StatusLine
from ._target import NameTarget, ObjectTarget, OptimizerSource, PairTarget, Target, watch_target
from ._throttle import Throttle

__all__ = [
    "HISTORY_STATS",
    "MAX_IN_FLIGHT",
    "ONE_OFFS",
    "Forward",
    "History",
    "Listeners",
    "NameTarget",
    "ObjectTarget",
    "OptimizerSource",
    "PairTarget",
    "Pending",
    "Refresher",
    "SnapshotSource",
    "StatusLine",
    "Target",
    "Throttle",
    "watch_target",
]
