"""A split report as static text and HTML, every user string escaped in HTML.

``report`` is a ``core.split.SplitReport``, read by attribute (``filters``, ``rows``, ``exhaustive``,
``root_type``, ``variable_count``, ``problems()``, ``code()``), not imported: the split module
renders itself through this one.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from ._format import ALIGN_LEFT, ALIGN_RIGHT, CELL_STYLE, FILTER_COLORS, format_bytes, format_shape
from ._snapshot import path_cell


def _readable(color: str) -> str:
    """``color`` as CSS, mixed with the page's text colour: darker on a light page, lighter on a dark
    one, so it reads at WCAG AA on both (the plain colour first, for a browser without color-mix)."""
    return f"color:{color};color:color-mix(in srgb,{color} 65%,currentColor)"


def _filter_color(index: int) -> str:
    return _readable(FILTER_COLORS[index % len(FILTER_COLORS)])


_WARN = _readable("#d32f2f")


def split_text(report: Any, names: Sequence[str] | None = None) -> str:
    """Plain text of ``report`` (a SplitReport); ``names``: the names bound (graphdef first), when
    not the default ones."""
    n = report.variable_count
    bound = list(names)[1:] if names else [f.name for f in report.filters]
    lines = [f"split of {report.root_type}: {n} Variable{'' if n == 1 else 's'} into {len(report.filters)} filters"]
    for f, name in zip(report.filters, bound):
        types = ", ".join(f"{t} {n}" for t, n in f.types.items())
        lines.append(
            f"  [{f.index + 1}] {f.label} -> {name}: {f.count} Variable{'' if f.count == 1 else 's'}, "
            f"{format_bytes(f.bytes)}{f' ({types})' if types else ''}"
        )
    lines += [f"  ! {p}" for p in report.problems()]
    return "\n".join(lines)


def split_html(report: Any, target: str = "model", names: Sequence[str] | None = None, max_rows: int = 200) -> str:
    """Static HTML of ``report`` (a ``core.split.SplitReport``): a column per filter, taken (●) and
    shadowed (○) marks; ``target`` and ``names`` as in ``report.code``."""
    esc = html.escape
    parts = ['<div class="nnx-lab-split">', f"<div><b>{esc(split_text(report).splitlines()[0])}</b></div>"]
    parts.append(
        f'<pre style="margin:4px 0;word-break:normal">{esc(report.code(target, names))}</pre>'
    )  # wrapped at spaces
    for line in report.problems():
        parts.append(f'<div class="nnx-lab-warn" style="{_WARN}">{esc(line)}</div>')
    table = '<table style="border-collapse:collapse;font-size:12px;white-space:nowrap">'
    head = (
        "".join(f"<th{ALIGN_LEFT}>{esc(n)}</th>" for n in ("path", "type", "shape", "dtype"))
        + f"<th{ALIGN_RIGHT}>bytes</th>"
    )
    for f in report.filters:
        color = _filter_color(f.index)
        head += (
            f'<th style="text-align:center;{CELL_STYLE};{color}" title="{esc(f.label)}">{esc(f.name)}<br>{f.count}</th>'
        )
    if not report.exhaustive:
        head += f'<th style="text-align:center;{CELL_STYLE};{_WARN}">remainder</th>'
    parts.append('<div style="max-height:420px;overflow:auto">' + table + f"<tr>{head}</tr>")
    for r in report.rows[:max_rows]:
        row = r.row
        cells = "".join(
            f"<td{ALIGN_LEFT}>{esc(v)}</td>"
            for v in (path_cell(row), row.type, format_shape(row.shape), row.dtype or "")
        )
        cells += f"<td{ALIGN_RIGHT}>{format_bytes(row.nbytes)}</td>"
        for f in report.filters:
            color = _filter_color(f.index)
            mark = "●" if r.taken_by == f.index else ("○" if f.index in r.matched_by else "")
            cells += f'<td style="text-align:center;{CELL_STYLE};{color}">{mark}</td>'
        if not report.exhaustive:
            cells += (
                f'<td style="text-align:center;{CELL_STYLE};{_WARN}">' + ("●" if r.taken_by is None else "") + "</td>"
            )
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</table></div>")
    if len(report.rows) > max_rows:
        parts.append(f"<div>… {len(report.rows) - max_rows} more rows</div>")
    parts.append("</div>")
    return "".join(parts)
