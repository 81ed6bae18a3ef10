"""What a live view says about itself, and who hears it: its status line (:class:`StatusLine`), its
listeners (:class:`Listeners`, the widgets that show it) and :class:`Forward`, which keeps a part's
fields readable and writable on the view that owns the part (``watcher.state`` is its status line's).

>>> line = StatusLine()
>>> line.fail(ValueError("bad\\nmore"))
>>> line.state, line.message
('error', 'ValueError: bad')
>>> line.to_dict("following `model`", ["loss: not a number (str); not recorded"], 0.5)["message"]
'following `model`; ValueError: bad; loss: not a number (str); not recorded'
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Callable, Iterable

from ..text import one_line
from .threads import exiting

__all__ = ["Forward", "Listeners", "StatusLine"]
logger = logging.getLogger("nnx_lab")


class Forward:
    """A field of one of the owner's parts, read and written as the owner's own: ``state =
    Forward("status_line")`` in a class makes ``obj.state`` ``obj.status_line.state``."""

    def __init__(self, part: str, name: str | None = None):
        self.part, self.name = part, name or ""  # "": the attribute's own name (__set_name__)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.name or name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.part), self.name)

    def __set__(self, obj: object, value: object) -> None:
        setattr(getattr(obj, self.part), self.name, value)


class StatusLine:
    """A live view's state (``waiting | live | error | missing | gone``; missing: a followed name holds
    no model now), what its last refresh said, a standing note, and its counters and costs."""

    def __init__(self):
        self.state = "waiting"
        self.message = ""  # what the last refresh said (an error); replaced by the next one
        self.note = ""  # a standing remark (background refresh unavailable) that every status keeps
        self.refreshes, self.last_refresh = 0, None  # last_refresh: epoch seconds
        self.cost_s: float | None = None  # the host's time for the last refresh
        # The device's time for one refresh, measured where its results were waited for (a cell's end, a
        # forced refresh); a loop's refreshes are throttled by it too: the statistics share the device.
        self.device_s: float | None = None

    def fail(self, error: BaseException) -> None:
        """A refresh failed: the line says so, and the log once per distinct message."""
        message = one_line(error)
        if (self.state, self.message) != ("error", message):
            logger.warning("nnx_lab: a refresh failed: %s", message, exc_info=error)
        self.state, self.message = "error", message

    def missing(self, problem: str) -> bool:
        """A followed name holds no model now (the next refresh looks again); whether that is news."""
        if (self.state, self.message) == ("missing", problem):
            return False
        self.state, self.message = "missing", problem
        return True

    def gone(self, problem: str) -> bool:
        """The model is gone for good; whether that is news."""
        if self.state == "gone":
            return False
        self.state, self.message = "gone", problem or "the model was garbage-collected"
        return True

    def found(self) -> None:
        """A followed name holds a model again: live once a refresh of it is published."""
        if self.state == "missing":
            self.state, self.message = "waiting", ""

    def published(self, cost_s: float) -> None:
        self.refreshes += 1
        self.last_refresh, self.cost_s = time.time(), cost_s
        if self.state not in ("gone", "missing"):  # a refresh dispatched before the model went says so
            self.state, self.message = "live", ""

    def lockstep(self, processes: int, every: int) -> None:
        """Several processes refresh together (no background thread): the note says how instead."""
        self.note = (
            f"background refresh unavailable with {processes} processes (they must refresh "
            f"together); refreshing every {every} ticks and after each cell"
        )

    def to_dict(self, label: str, problems: Iterable[str], interval: float) -> dict:
        """What the widget shows: the message joins ``label``, this line's message, ``problems`` and the note."""
        ms = lambda s: None if s is None else round(s * 1e3, 2)  # noqa: E731
        return {
            "state": self.state,
            "message": "; ".join(m for m in (label, self.message, *problems, self.note) if m),
            "last_refresh": self.last_refresh,
            "cost_ms": ms(self.cost_s),
            "device_ms": ms(self.device_s),
            "refreshes": self.refreshes,
            "interval_s": round(interval, 3),
        }


class Listeners:
    """The callbacks told of every change of ``owner`` (the widgets that show it)."""

    def __init__(self, owner: object):
        self._owner = owner
        self._listeners: list[Callable[[Any], None]] = []
        self._last_error = ""  # the last listener failure logged (at warning level once)

    def add(self, listener: Callable[[Any], None]) -> None:
        self._listeners.append(listener)

    def notify(self, _finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        # At exit (a kernel restarting) IPython clears the namespace, collecting every watched model:
        # "gone: garbage-collected" would be untrue (the front end says the kernel restarted).
        if _finalizing() or exiting():
            return
        for listener in list(self._listeners):
            try:
                listener(self._owner)
            except Exception as e:  # noqa: BLE001 - a boundary: a broken display must not break the training loop
                said = one_line(e)
                level = logging.DEBUG if said == self._last_error else logging.WARNING  # said once
                logger.log(level, "nnx_lab: a viewer failed to show a refresh: %s", said, exc_info=True)
                self._last_error = said
