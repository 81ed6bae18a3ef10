"""A capture report as static text and HTML: one row per captured array (statistics and a
histogram as block characters), the gradients likewise; every user string escaped in HTML.

``report`` is a ``core.capture.CaptureReport``, read by attribute (``snapshot``, ``hist``,
``grads_snapshot``, ``grads_hist``, ``types``, ``messages``), not imported: the capture package
renders itself through this module.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from ._format import ALIGN_LEFT, ALIGN_RIGHT, count_noun, format_number, format_shape, nonfinite_text, sparkline

_COLUMNS = ("path", "type", "shape", "dtype", "mean", "std", "min", "max", "histogram")


def capture_text(report: Any, max_rows: int | None = 50) -> str:
    """Plain text of ``report`` (a CaptureReport): a head line, its messages, the captured rows and
    the gradient rows, at most ``max_rows`` each (None: all)."""
    types = ", ".join(t.__name__ for t in report.types)
    lines = [f"captured {count_noun(_arrays(report.snapshot), 'array')} ({types})"]
    lines += [f"!! {m}" for m in report.messages]
    if report.snapshot.rows:
        lines.append(_text_rows(report.snapshot, report.hist, max_rows))
    if report.grads_snapshot is not None and report.grads_snapshot.rows:
        lines.append(f"gradients at {count_noun(_arrays(report.grads_snapshot), 'perturbation')}")
        lines.append(_text_rows(report.grads_snapshot, report.grads_hist or (), max_rows))
    return "\n".join(lines)


def _arrays(snap: Any) -> int:
    """Rows that are arrays (a stacked value's layer rows are part of its array)."""
    return sum(1 for row in snap.rows if getattr(row, "layer_of", None) is None)


def capture_html(report: Any, max_rows: int = 200) -> str:
    """HTML of ``report`` (a CaptureReport), every user string escaped, at most ``max_rows`` rows
    per table."""
    esc = html.escape
    parts = ['<div class="nnx-lab-capture">', f"<div><b>{esc(capture_text(report).splitlines()[0])}</b></div>"]
    for m in report.messages:
        parts.append(f'<div class="nnx-lab-warn" style="color:#b45309">{esc(m)}</div>')
    if report.snapshot.rows:
        parts.append(_html_rows(report.snapshot, report.hist, max_rows))
    if report.grads_snapshot is not None and report.grads_snapshot.rows:
        heading = f"gradients at {count_noun(_arrays(report.grads_snapshot), 'perturbation')}"
        parts.append(f"<div><b>{esc(heading)}</b></div>")
        parts.append(_html_rows(report.grads_snapshot, report.grads_hist or (), max_rows))
    parts.append("</div>")
    return "".join(parts)


def _cells(row: Any, hist: Any) -> list[str]:
    stats = row.stats or {}
    note = "" if row.status == "ok" else f"  ({row.status})"
    values = [row.path_text + note, row.type, format_shape(row.shape), row.dtype or ""]
    values += [format_number(stats.get(k)) for k in ("mean", "std", "min", "max")]
    nonfinite = nonfinite_text(row)
    values.append(sparkline(hist) + (f"  {nonfinite}" if nonfinite else ""))
    return values


def _text_rows(snap: Any, hists: Sequence, max_rows: int | None) -> str:
    shown = snap.rows if max_rows is None else snap.rows[:max_rows]
    cells = [list(_COLUMNS)] + [_cells(r, h) for r, h in zip(shown, hists)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    if len(shown) < len(snap.rows):
        lines.append(f"… {len(snap.rows) - len(shown)} more rows")
    return "\n".join(lines)


def _html_rows(snap: Any, hists: Sequence, max_rows: int) -> str:
    esc = html.escape
    numeric = {"mean", "std", "min", "max"}
    align = [ALIGN_RIGHT if c in numeric else ALIGN_LEFT for c in _COLUMNS]
    parts = [
        '<div style="max-height:420px;overflow:auto">'
        '<table style="border-collapse:separate;border-spacing:10px 1px;font-size:12px;white-space:nowrap"><tr>'
        + "".join(f"<th{a}>{esc(c)}</th>" for a, c in zip(align, _COLUMNS))
        + "</tr>"
    ]
    for row, hist in zip(snap.rows[:max_rows], hists):
        cells = _cells(row, hist)
        title = f' title="{esc(f"{hist[0]:.4g} … {hist[1]:.4g}")}"' if hist else ""
        parts.append(
            "<tr>"
            + "".join(f"<td{a}>{esc(c)}</td>" for a, c in zip(align[:-1], cells[:-1]))
            + f'<td style="text-align:left;font-family:monospace"{title}>{esc(cells[-1])}</td></tr>'
        )
    parts.append("</table></div>")
    if len(snap.rows) > max_rows:
        parts.append(f"<div>… {len(snap.rows) - max_rows} more rows</div>")
    return "".join(parts)
