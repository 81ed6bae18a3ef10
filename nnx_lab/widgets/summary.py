"""The summary widget: a :class:`~nnx_lab.core.summary.Summary` as a tree table (sortable, filterable,
collapsible, a bar per row for its share of FLOPs), with its text and static HTML for saved notebooks.

The peak-memory line needs one compile of the whole program (:mod:`nnx_lab.core.summary._memory`):
shown, the widget lists the rows at once and compiles on a background thread, then updates its
header and its saved HTML. Where a kernel cannot deliver updates from a thread (ipykernel < 6,
Colab) it compiles after the cell instead, on the main thread.

Importing this module makes a :class:`Summary` displayed in a Jupyter kernel or in marimo show this widget
(``nnx_lab.summary`` is imported from here); elsewhere it stays text and static HTML.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

from .._ipython import cell_hooks
from ..core.summary import (
    DISPLAY_HOOKS,
    MARIMO_HOOKS,
    RNG_MARK,
    Summary,
    bytes_text,
    count_text,
    rng_flops_text,
    summary,
    variables_text,
)
from . import traits
from ._base import STATIC, Widget, background_unsupported

__all__ = ["Summary", "SummaryView", "display_summary", "summary"]

_log = logging.getLogger("nnx_lab")


def payload(summary: Summary) -> dict:
    """What the front end draws: the header's lines, and per row its texts and sort values."""
    lines = summary.header_lines(wait=False)
    rows = []
    for r in summary.rows:
        params = summary.row_params(r)[0]
        rows.append(
            {
                "path_text": r.path or f"({summary.model_class})",
                "depth": r.depth,
                "cls": r.cls,
                "inputs": r.inputs,
                "outputs": r.outputs,
                "params": params,
                "params_text": summary.row_params_text(r),
                # every Variable type under the module (batch statistics, RNG state): the cell's tooltip
                "params_title": variables_text(r.params_total, summary.param_types),
                "flops": r.flops,
                "flops_text": count_text(r.flops) + (RNG_MARK if r.rng_flops else ""),
                "flops_exact": f"{r.flops:,}",
                "flops_note": rng_flops_text(r),  # why a Dropout costs FLOPs: in the cell's tooltip
                "bwd": r.backward_flops or 0,
                "bwd_text": count_text(r.backward_flops),
                "bytes": r.bytes_accessed,
                "bytes_text": bytes_text(r.bytes_accessed),
                "out": r.output_bytes,
                "out_text": bytes_text(r.output_bytes),
            }
        )
    return {
        "title": lines[0],
        "header": lines[1:] + ([note] if (note := summary.rng_note()) else []),  # the FLOPs marked *
        "rows": rows,
        "total_flops": summary.flops,
        "backward": summary.backward_flops is not None,
    }


class SummaryView(Widget):
    """A :class:`~nnx_lab.core.summary.Summary` in a notebook; ``summary_data`` is the Summary."""

    _esm = STATIC / "summary.js"
    summary = traits.Payload(traits.SummaryPayload).tag(sync=True)

    def __init__(self, summary: Summary, **kwargs: Any):
        if not isinstance(summary, Summary):
            raise TypeError(f"SummaryView needs a nnx_lab Summary, got {type(summary).__name__}")
        self._summary = summary
        self._shown = False  # displayed: the peak memory is then computed
        self._started = False  # its background compile asked for
        super().__init__(**kwargs)
        self.summary = payload(summary)

    @property
    def summary_data(self) -> Summary:
        return self._summary

    def show(self) -> SummaryView:
        """Display the widget, then compute the peak memory (a thread where updates from one arrive)."""
        peak = self._summary.peak
        pending = peak is not None and not peak.ready
        super().show()
        self._start_memory()
        if pending and peak is not None and peak.ready:  # the compile ended before the display's handle existed
            self._memory_ready()
        return self

    def _repr_mimebundle_(self, **kwargs: Any):
        bundle = super()._repr_mimebundle_(**kwargs)
        self._start_memory()  # displayed as a cell's value too, not only by show()
        return bundle

    def _start_memory(self) -> None:
        self._shown = True
        peak = self._summary.peak
        if self._started or peak is None or peak.ready or background_unsupported() is not None:
            return
        self._started = True
        peak.start(self._memory_ready)

    def _memory_ready(self) -> None:
        self.summary = payload(self._summary)
        self._update_display()  # the saved notebook's copy gets the peak memory too

    def _after_cell(self) -> None:
        """Where no thread can update the widget: the compile after the cell that showed it."""
        peak = self._summary.peak
        if peak is None or peak.ready:
            cell_hooks.untrack_widget(self)
            return
        if self._shown and background_unsupported() is not None:
            peak.result()
            self._memory_ready()
            cell_hooks.untrack_widget(self)

    # -- what a saved notebook shows without a kernel ----------------------------------
    def _fallback(self) -> tuple[str, str]:
        return self._summary.to_text(wait=False), self._summary.to_html(wait=False)

    def __repr__(self) -> str:
        return f"SummaryView · {self._summary!r}"


def in_kernel() -> bool:
    """Whether a Jupyter kernel runs this (a widget can render); not a terminal IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and "ipykernel" in sys.modules and getattr(ip, "kernel", None) is not None


def display_summary(summary: Summary) -> None:
    """The widget in a Jupyter kernel; elsewhere (terminal IPython) the text and HTML, peak memory included."""
    from IPython.display import display

    if in_kernel():
        try:
            SummaryView(summary).show()
            return
        except Exception:  # a boundary: a front end that cannot make widgets still gets the summary
            _log.exception("nnx_lab: the summary widget could not be shown; showing the static table")
    display({"text/plain": str(summary), "text/html": summary.to_html()}, raw=True)


def _display_hook(s: Summary) -> Callable[[], None] | None:
    """Summary's IPython display in a Jupyter kernel (the widget), None elsewhere."""
    return (lambda: display_summary(s)) if in_kernel() else None


if _display_hook not in DISPLAY_HOOKS:
    DISPLAY_HOOKS.append(_display_hook)


def _marimo_hook(s: Summary) -> Callable[[], SummaryView]:
    """Summary's display in marimo (its ``_display_``): the widget, peak memory included. marimo runs
    no after-cell hook and takes no widget update from a thread, so the peak is computed first."""

    def view() -> SummaryView:
        if s.peak is not None:
            s.peak.result()
        return SummaryView(s)

    return view


if _marimo_hook not in MARIMO_HOOKS:
    MARIMO_HOOKS.append(_marimo_hook)
