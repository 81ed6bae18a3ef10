"""The non-finite report widget: :func:`~nnx_lab.find_nonfinite`'s verdict (forward, backward or
input; the module path, class and method), the primitive and its source line, the bad elements'
counts and first positions, and a table of the module calls on the path to the culprit with their
inputs' and outputs' statistics and the non-finite Variables each read. The widget holds the
report's payload (strings only, every number written by Python) and its static text and HTML.

Importing this module makes a :class:`NonfiniteReport` displayed in a Jupyter kernel or in marimo
show this widget (``nnx_lab.find_nonfinite`` is imported from here); elsewhere it stays text.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..core.nonfinite import DISPLAY_HOOKS, MARIMO_HOOKS, NonfiniteReport, find_nonfinite
from . import traits
from ._base import STATIC, Widget
from .compare import widgets_work

__all__ = ["NonfiniteReport", "NonfiniteView", "find_nonfinite"]

_log = logging.getLogger("nnx_lab")


class NonfiniteView(Widget):
    """A :class:`~nnx_lab.NonfiniteReport` as a panel (``NonfiniteView(nnx_lab.find_nonfinite(...))``)."""

    _esm = STATIC / "nonfinite.js"
    report = traits.Payload(traits.NonfiniteReport).tag(sync=True)

    def __init__(self, report: NonfiniteReport, **kwargs: Any):
        if not isinstance(report, NonfiniteReport):
            raise TypeError(
                f"NonfiniteView shows a NonfiniteReport (nnx_lab.find_nonfinite()), not {type(report).__name__}"
            )
        self._report = report
        self._text, self._html = report.to_text(), report._repr_html_()
        super().__init__(report=report.payload(), **kwargs)

    @property
    def result(self) -> NonfiniteReport:
        return self._report

    def _fallback(self) -> tuple[str, str]:
        return self._text, self._html

    def __repr__(self) -> str:
        return f"NonfiniteView · {self._text.splitlines()[0]}"


def _bundle(report: NonfiniteReport) -> Callable[[], None] | None:
    """Shows the widget (with the static text and HTML) in a kernel; None elsewhere (text/HTML)."""
    if not widgets_work():
        return None
    try:
        view = NonfiniteView(report)
    except Exception:  # noqa: BLE001 - boundary: the display falls back to the static text, logged
        _log.warning("nnx_lab: the non-finite widget could not be made; showing the text", exc_info=True)
        return None

    def show() -> None:
        from IPython.display import display

        display(view)

    return show


if _bundle not in DISPLAY_HOOKS:
    DISPLAY_HOOKS.append(_bundle)


def _marimo_hook(report: NonfiniteReport) -> Callable[[], NonfiniteView]:
    """A report's display in marimo (its ``_display_``): the widget."""
    return lambda: NonfiniteView(report)


if _marimo_hook not in MARIMO_HOOKS:
    MARIMO_HOOKS.append(_marimo_hook)
