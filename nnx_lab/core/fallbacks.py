"""Fallbacks that cost speed, said where a user can see them: at INFO the first time for each cause
(the message's text and the error's type), at DEBUG after that. A bug in a hot path (a flatten that
raises on every refresh, so flax walks instead) then shows in the log once, not only as slowness;
the expected, cheap fallbacks keep logging at DEBUG where they are.

>>> import logging
>>> seen = []
>>> class Keep(logging.Handler):
...     def emit(self, record):
...         seen.append((record.levelname, record.getMessage()))
>>> log = logging.getLogger("nnx_lab")
>>> log.addHandler(handler := Keep()); old = log.level; log.setLevel(logging.DEBUG)
>>> for _ in range(3):
...     slower("jax could not flatten %s: flax's walk", "Net", error=ValueError("bad"))
>>> log.removeHandler(handler); log.setLevel(old)
>>> [level for level, _ in seen], seen[0][1]
(['INFO', 'DEBUG', 'DEBUG'], "nnx_lab: jax could not flatten Net: flax's walk (slower; said once): ValueError: bad")
"""

from __future__ import annotations

import logging
import threading
from typing import Any

_log = logging.getLogger("nnx_lab")
_said: set[tuple[str, str]] = set()  # (message, error type): a few per call site
_lock = threading.Lock()


def slower(message: str, *args: Any, error: BaseException | None = None) -> None:
    """Log that nnx_lab took a slower path: ``message % args``, and ``error`` (what made it)."""
    cause = (message, type(error).__name__)
    with _lock:  # said once where it can be seen: not used up while INFO is off
        first = cause not in _said and _log.isEnabledFor(logging.INFO)
        if first:
            _said.add(cause)
    if first:
        tail = f": {type(error).__name__}: {error}" if error is not None else ""
        _log.info("nnx_lab: " + message + " (slower; said once)" + tail.replace("%", "%%"), *args, exc_info=error)
    else:
        _log.debug("nnx_lab: " + message, *args, exc_info=error is not None)
