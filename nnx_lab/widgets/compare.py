"""The comparison widget: a :class:`~nnx_lab.Comparison` on the viewer's tree table.

Modules (with their aggregates) open and close; each Variable's row has the difference columns
(‖a−b‖/‖a‖ with a bar, max |a−b|, cosine, fraction changed, identical), largest change first,
structural problems (missing, unexpected, shape, tied, unreadable) on top and tinted; "changed
only" and a path filter; the one-line verdict above. The widget holds the comparison's JSON
payload and its static text and HTML (what a notebook saved or opened without a kernel shows): no
array, so no device memory.

Importing this module makes a :class:`Comparison` displayed in a Jupyter kernel or in marimo show this widget
(``nnx_lab.compare`` is imported from here); elsewhere (a terminal, a script) it stays text.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

from ..core.compare import DISPLAY_HOOKS, MARIMO_HOOKS, Comparison, compare, comparison_payload
from . import traits
from ._base import STATIC, Widget

__all__ = ["Comparison", "ComparisonView", "compare", "widgets_work"]

_log = logging.getLogger("nnx_lab")


class ComparisonView(Widget):
    """A :class:`~nnx_lab.Comparison` as an interactive table (``ComparisonView(nnx_lab.compare(a, b))``)."""

    _esm = STATIC / "compare.js"
    comparison = traits.Payload(traits.ComparisonPayload).tag(sync=True)

    def __init__(self, cmp: Comparison, *, max_rows: int | None = 50, **kwargs: Any):
        if not isinstance(cmp, Comparison):
            raise TypeError(f"ComparisonView shows a Comparison (nnx_lab.compare(a, b)), not {type(cmp).__name__}")
        self._cmp = cmp
        self._text, self._html = cmp.to_text(max_rows=max_rows), cmp._repr_html_()
        super().__init__(comparison=comparison_payload(cmp), **kwargs)

    @property
    def result(self) -> Comparison:
        return self._cmp

    def _fallback(self) -> tuple[str, str]:
        return self._text, self._html

    def __repr__(self) -> str:
        return f"ComparisonView · {self._cmp.verdict}"


def widgets_work() -> bool:
    """Whether a displayed widget reaches a front end: IPython running in a Jupyter kernel."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _bundle(cmp: Comparison) -> dict | None:
    """The widget's mimebundle (with the static text and HTML) in a kernel, else None (text/HTML)."""
    if not widgets_work():
        return None
    try:
        bundle = ComparisonView(cmp)._repr_mimebundle_()
    except Exception:  # noqa: BLE001 - boundary: the display falls back to the static table, logged
        _log.warning("nnx_lab: the comparison widget could not be made; showing the static table", exc_info=True)
        return None
    return bundle[0] if isinstance(bundle, tuple) else bundle


if _bundle not in DISPLAY_HOOKS:
    DISPLAY_HOOKS.append(_bundle)


def _marimo_hook(cmp: Comparison) -> Callable[[], ComparisonView]:
    """Comparison's display in marimo (its ``_display_``): the widget."""
    return lambda: ComparisonView(cmp)


if _marimo_hook not in MARIMO_HOOKS:
    MARIMO_HOOKS.append(_marimo_hook)
