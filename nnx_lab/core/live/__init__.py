"""Live views: the refresh engine (``_engine.py``: the throttled in-flight queue, its threads and
the threading model, in its docstring), what a view refreshes: its target, resolved at every refresh (``_target.py``:
an object by weak reference, an ``nnx.split`` pair, or a followed name), the throttle
(``_throttle.py``) and the history of refreshes (``_history.py``). The :class:`~nnx_lab.core.watcher.Watcher`
composes these with a snapshot and the training series."""

from ._engine import MAX_IN_FLIGHT, Pending, Refresher
from ._history import HISTORY_STATS, History
from ._target import NameTarget, ObjectTarget, PairTarget, Target, watch_target
from ._throttle import Throttle

__all__ = [
    "HISTORY_STATS",
    "MAX_IN_FLIGHT",
    "History",
    "NameTarget",
    "ObjectTarget",
    "PairTarget",
    "Pending",
    "Refresher",
    "Target",
    "Throttle",
    "watch_target",
]
