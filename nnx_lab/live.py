"""Widgets on screen (viewers, panels), and the one IPython ``post_run_cell`` hook that refreshes them.

Cheap to import (no jax, no widgets): the extension registers the hook at load time.
"""

from __future__ import annotations

import weakref
from typing import Any

_widgets: "weakref.WeakSet[Any]" = weakref.WeakSet()


def track_widget(widget: Any) -> None:
    """``widget._after_cell()`` runs after every cell while the widget lives (in IPython, with or
    without ``%load_ext nnx_lab``: the first widget registers the hook)."""
    _widgets.add(widget)
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        register_hooks(ip)


def untrack_widget(widget: Any) -> None:
    _widgets.discard(widget)


def widgets(kind: type) -> list[Any]:
    """The live widgets of one class."""
    return [w for w in list(_widgets) if isinstance(w, kind)]


def _post_run_cell(result: Any = None) -> None:
    """After every cell: apply clicks queued while it ran, then refresh each widget (never raises)."""
    from . import inbox

    inbox.drain()
    for viewer in list(_widgets):
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
