"""Viewers on screen, and the one IPython ``post_run_cell`` hook that refreshes them.

Cheap to import (no jax, no widgets): the extension registers the hook at load time.
"""

from __future__ import annotations

import weakref
from typing import Any

_viewers: "weakref.WeakSet[Any]" = weakref.WeakSet()


def track_viewer(viewer: Any) -> None:
    _viewers.add(viewer)


def untrack_viewer(viewer: Any) -> None:
    _viewers.discard(viewer)


def _post_run_cell(result: Any = None) -> None:
    """After every cell: refresh each live viewer (never raises into the shell)."""
    for viewer in list(_viewers):
        try:
            viewer._after_cell()
        except Exception:
            pass


def _is_ours(fn: Any) -> bool:
    return getattr(fn, "__module__", None) == __name__ and getattr(fn, "__name__", None) == "_post_run_cell"


def register_hooks(ipython: Any) -> None:
    """Register the hook once, whoever asks (``%load_ext`` or a first ``watch()``)."""
    if not any(_is_ours(fn) for fn in ipython.events.callbacks["post_run_cell"]):
        ipython.events.register("post_run_cell", _post_run_cell)


def unregister_hooks(ipython: Any) -> None:
    for fn in [fn for fn in ipython.events.callbacks["post_run_cell"] if _is_ours(fn)]:
        ipython.events.unregister("post_run_cell", fn)
