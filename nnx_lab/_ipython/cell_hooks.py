"""Widgets on screen (viewers, panels), and the IPython hooks: ``post_run_cell`` refreshes them,
``pre_run_cell`` numbers the cells (:func:`current_cell`).

Cheap to import (no jax, no widgets): the extension registers the hook at load time.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

logger = logging.getLogger("nnx_lab")

_widgets: weakref.WeakSet[Any] = weakref.WeakSet()
_cell = {"n": 0, "running": False}


def current_cell() -> int | None:
    """A number for the notebook cell running now, new for every cell; None when no cell runs
    (a script, a test, or IPython before the first widget registered the hooks)."""
    return _cell["n"] if _cell["running"] else None


def _pre_run_cell(info: Any = None) -> None:
    _cell["n"] += 1
    _cell["running"] = True


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
    from . import busy_queue

    _cell["running"] = False
    busy_queue.drain()
    for viewer in list(_widgets):
        try:
            viewer._after_cell()
        except Exception:  # one broken widget must not keep the others from refreshing
            logger.exception("nnx_lab: refreshing a widget after the cell failed")


_HOOKS = {"pre_run_cell": _pre_run_cell, "post_run_cell": _post_run_cell}


def _is_ours(fn: Any, event: str) -> bool:
    return getattr(fn, "__module__", None) == __name__ and getattr(fn, "__name__", None) == f"_{event}"


def register_hooks(ipython: Any) -> None:
    """Register the hooks once, whoever asks (``%load_ext`` or a first widget)."""
    for event, hook in _HOOKS.items():
        if not any(_is_ours(fn, event) for fn in ipython.events.callbacks[event]):
            ipython.events.register(event, hook)


def unregister_hooks(ipython: Any) -> None:
    for event in _HOOKS:
        for fn in [fn for fn in ipython.events.callbacks[event] if _is_ours(fn, event)]:
            ipython.events.unregister(event, fn)
