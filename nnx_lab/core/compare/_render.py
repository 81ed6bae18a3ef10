"""A :class:`Comparison` as a text table and as static HTML (every user string escaped as text)."""

from __future__ import annotations

import html
import math
from typing import Any

from ..render import format_number

__all__ = ["html_table", "text_table"]

_COLUMNS = (
    "path",
    "status",
    "rel_change",
    "max_abs",
    "cosine",
    "frac_changed",
    "identical",
    "shape",
    "dtype",
    "note",
)


def _number(x: Any) -> str:
    """A figure as the widget shows it (``core.render.format_number``); ``-`` for none, yes/no for a flag."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return format_number(x)


def _shape(row: Any) -> str:
    if row.shape_a is not None and row.shape_b is not None and row.shape_a != row.shape_b:
        return f"{row.shape_a} vs {row.shape_b}"
    return str(row.shape_a if row.shape_a is not None else row.shape_b)


def _dtype(row: Any) -> str:
    if row.dtype_a and row.dtype_b and row.dtype_a != row.dtype_b:
        return f"{row.dtype_a} vs {row.dtype_b}"
    return str(row.dtype_a or row.dtype_b)


def _cells(row: Any) -> list[str]:
    path = row.path if row.path_b is None else f"{row.path} <- {row.path_b}"
    note = "; ".join(t for t in (row.mismatch, row.note) if t)
    return [
        ("  " if row.layer is not None else "") + path,
        row.status,
        _number(row.rel_change),
        _number(row.max_abs),
        _number(row.cosine),
        _number(row.frac_changed),
        _number(row.identical),
        _shape(row),
        _dtype(row),
        note,
    ]


def text_table(cmp: Any, max_rows: int | None = 50) -> str:
    rows = list(cmp.rows if max_rows is None else cmp.rows[:max_rows])
    table = [list(_COLUMNS)] + [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    lines = [f"{cmp.a_type} vs {cmp.b_type}: {cmp.verdict}"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in table]
    if max_rows is not None and len(cmp.rows) > max_rows:
        lines.append(f"... {len(cmp.rows) - max_rows} more rows")
    return "\n".join(lines)


def _bar(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return ""
    width = int(round(100 * min(1.0, x)))  # relative change of 1 (as large as a itself) fills the cell
    return f'<div style="height:4px;background:#d62728;width:{width}%"></div>'


def html_table(cmp: Any, max_rows: int = 200) -> str:
    esc = html.escape
    head = "".join(f"<th style='text-align:left;padding:2px 6px'>{esc(c)}</th>" for c in _COLUMNS)
    body = []
    for r in cmp.rows[:max_rows]:
        cells = _cells(r)
        tds = [f"<td style='padding:1px 6px;white-space:pre'>{esc(c)}</td>" for c in cells]
        tds[2] = f"<td style='padding:1px 6px'>{esc(cells[2])}{_bar(r.rel_change)}</td>"
        body.append("<tr>" + "".join(tds) + "</tr>")
    more = (
        f"<p>... {len(cmp.rows) - max_rows} more rows (Comparison.rows has them all)</p>"
        if len(cmp.rows) > max_rows
        else ""
    )
    title = f"{esc(cmp.a_type)} vs {esc(cmp.b_type)}: {esc(cmp.verdict)}"
    return (
        f"<div class='nnx-lab-compare'><p style='font-family:monospace'>{title}</p>"
        f"<table style='font-family:monospace;font-size:12px;border-collapse:collapse'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}</div>"
    )
