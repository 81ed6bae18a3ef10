"""Widgets on screen (viewers, panels), and the IPython hooks: ``post_run_cell`` refreshes them,
``pre_run_cell`` numbers the cells (:func:`current_cell`); after a cell that ran out of device
memory (XLA's RESOURCE_EXHAUSTED) ``post_run_cell`` prints the memory ledger's biggest holders.

Cheap to import (no jax, no widgets): the extension registers the hook at load time.

Widgets on screen outlive a reload of nnx_lab: ``importlib.reload`` of this module (autoreload)
keeps its widget set, and a fresh copy of the package (``%reload_ext nnx_lab`` after the package
was re-imported or upgraded in a running kernel) adopts the widget set of the earlier copy whose
hooks are registered in the shell (:func:`adopt`), so every viewer keeps refreshing after cells.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult, InteractiveShell

logger = logging.getLogger("nnx_lab")

T = TypeVar("T")


@runtime_checkable
class AfterCell(Protocol):
    """A widget refreshed after every cell while it lives (what :func:`track_widget` takes)."""

    def _after_cell(self) -> None: ...


if "_widgets" not in globals():  # kept across importlib.reload of this module: the widgets on screen stay
    _widgets: weakref.WeakSet[AfterCell] = weakref.WeakSet()
    _cell = {"n": 0, "running": False}


def current_cell() -> int | None:
    """A number for the notebook cell running now, new for every cell; None when no cell runs
    (a script, a test, or IPython before the first widget registered the hooks)."""
    return _cell["n"] if _cell["running"] else None


def _pre_run_cell(info: ExecutionInfo | None = None) -> None:
    _cell["n"] += 1
    _cell["running"] = True


def track_widget(widget: AfterCell) -> None:
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


def untrack_widget(widget: object) -> None:
    if isinstance(widget, AfterCell):
        _widgets.discard(widget)


def widgets(kind: type[T]) -> list[T]:
    """The live widgets of one class."""
    return [w for w in list(_widgets) if isinstance(w, kind)]


def _post_run_cell(result: ExecutionResult | None = None) -> None:
    """After every cell: apply clicks queued while it ran, then refresh each widget (never raises)."""
    from . import busy_queue

    _cell["running"] = False
    busy_queue.drain()
    for viewer in list(_widgets):
        try:
            viewer._after_cell()
        except Exception:  # one broken widget must not keep the others from refreshing
            logger.exception("nnx_lab: refreshing a widget after the cell failed")
    error = getattr(result, "error_in_exec", None)
    if error is not None and is_out_of_memory(error):
        _show_memory_holders()


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is XLA's RESOURCE_EXHAUSTED (out of device memory): its type's name or the
    start of its text; reads the error object only (the hook's cheap path; no jax import)."""
    if "RESOURCE_EXHAUSTED" in type(error).__name__.upper():
        return True
    try:
        return "RESOURCE_EXHAUSTED" in str(error)[:2000]
    except Exception:  # noqa: BLE001 - a user exception whose __str__ raises is no OOM we can tell
        return False


def _show_memory_holders() -> None:
    """Under an out-of-memory traceback: the ledger's biggest holders and what frees them (once)."""
    try:
        from ..core.memory import memory

        print(memory().top_text(5))
    except Exception:  # noqa: BLE001 - boundary: the ledger must not add a second traceback
        logger.exception("nnx_lab: the memory ledger after an out-of-memory error failed")


_HOOKS = {"pre_run_cell": _pre_run_cell, "post_run_cell": _post_run_cell}


def _is_ours(fn: Callable[..., object], event: str) -> bool:
    return getattr(fn, "__module__", None) == __name__ and getattr(fn, "__name__", None) == f"_{event}"


def adopt(ipython: InteractiveShell) -> int:
    """Take over the widgets of an earlier copy of this module whose hooks are registered in
    ``ipython`` (the package imported again: ``%reload_ext`` after an upgrade, a module reload), and
    unregister its hooks: ours refresh those widgets from now on. The earlier copy's widget set itself
    is kept (the widgets' own classes untrack from it when closed). An earlier hook without such a
    set stays registered, so its widgets keep refreshing. Returns how many widgets were adopted."""
    global _widgets, _cell
    adopted = 0
    for event, hook in _HOOKS.items():
        for fn in [fn for fn in ipython.events.callbacks[event] if _is_ours(fn, event) and fn is not hook]:
            earlier = getattr(fn, "__globals__", {})
            widgets, cell = earlier.get("_widgets"), earlier.get("_cell")
            if not isinstance(widgets, weakref.WeakSet) or not isinstance(cell, dict):
                logger.warning("nnx_lab: widgets of an earlier nnx_lab copy are refreshed by its own hook")
                continue
            if widgets is not _widgets:
                adopted += len(widgets)
                widgets.update(_widgets)
                cell["n"] = max(cell.get("n", 0), _cell["n"])
                _widgets, _cell = widgets, cell
            ipython.events.unregister(event, fn)
    return adopted


def register_hooks(ipython: InteractiveShell) -> None:
    """Register the hooks once, whoever asks (``%load_ext`` or a first widget), adopting the widgets
    of an earlier copy of this module first (:func:`adopt`)."""
    adopt(ipython)
    for event, hook in _HOOKS.items():
        if not any(fn is hook for fn in ipython.events.callbacks[event]):
            ipython.events.register(event, hook)


def unregister_hooks(ipython: InteractiveShell) -> None:
    for event, hook in _HOOKS.items():
        for fn in [fn for fn in ipython.events.callbacks[event] if fn is hook]:
            ipython.events.unregister(event, fn)
