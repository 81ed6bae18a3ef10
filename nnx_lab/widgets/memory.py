"""The memory widget: a :class:`~nnx_lab.Ledger` (``nnx_lab.memory()``) as a sortable tree, device ->
holder -> group (Variable type, optimizer entry, ``array``), with each row's bytes and a bar against
the device's limit (on a backend without one, e.g. CPU: against the device's live arrays), "shared
with …" notes, the per-device total line, and the statements that would free the most with the
bytes each returns, as text to copy (nothing is run). The widget holds the ledger's JSON payload
and its static text and HTML (what a notebook saved or opened without a kernel shows): no array.

Importing this module makes a :class:`Ledger` displayed in a Jupyter kernel or in marimo show this widget
(``nnx_lab.memory`` is imported from here); elsewhere (a terminal, a script) it stays text.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..core.memory import DISPLAY_HOOKS, MARIMO_HOOKS, Ledger, StepPlan, memory
from ..core.render import memory_payload
from . import traits
from ._base import STATIC, Widget
from .compare import widgets_work

__all__ = ["Ledger", "MemoryView", "StepPlan", "memory", "widgets_work"]

_log = logging.getLogger("nnx_lab")


class MemoryView(Widget):
    """A :class:`~nnx_lab.Ledger` as an interactive tree (``MemoryView(nnx_lab.memory())``)."""

    _esm = STATIC / "memory.js"
    ledger = traits.Payload(traits.LedgerPayload).tag(sync=True)

    def __init__(self, ledger: Ledger, **kwargs: Any):
        if not isinstance(ledger, Ledger):
            raise TypeError(f"MemoryView shows a Ledger (nnx_lab.memory()), not {type(ledger).__name__}")
        self._ledger = ledger
        self._text, self._html = ledger.to_text(), ledger._repr_html_()
        super().__init__(ledger=memory_payload(ledger), **kwargs)

    @property
    def result(self) -> Ledger:
        return self._ledger

    def _fallback(self) -> tuple[str, str]:
        return self._text, self._html

    def __repr__(self) -> str:
        return f"MemoryView · {self._text.splitlines()[0]}"


def _bundle(ledger: Ledger) -> dict | None:
    """The widget's mimebundle (with the static text and HTML) in a kernel, else None (text/HTML)."""
    if not widgets_work():
        return None
    try:
        bundle = MemoryView(ledger)._repr_mimebundle_()
    except Exception:  # noqa: BLE001 - boundary: the display falls back to the static table, logged
        _log.warning("nnx_lab: the memory widget could not be made; showing the static table", exc_info=True)
        return None
    return bundle[0] if isinstance(bundle, tuple) else bundle


if _bundle not in DISPLAY_HOOKS:
    DISPLAY_HOOKS.append(_bundle)


def _marimo_hook(ledger: Ledger) -> Callable[[], MemoryView]:
    """A Ledger's display in marimo (its ``_display_``): the widget."""
    return lambda: MemoryView(ledger)


if _marimo_hook not in MARIMO_HOOKS:
    MARIMO_HOOKS.append(_marimo_hook)
