"""Static renderings of a Snapshot: a text table and an HTML table, every user string escaped.

>>> format_bytes(302_700_000)
'288.7 MiB'
>>> format_number(0.000123456), format_number(12345678.0), format_number(None)
('0.0001235', '1.235e+07', '')
"""

from __future__ import annotations

import html
from typing import Any

from .graph import path_text

# ``snap`` is a core.snapshot.Snapshot and ``row`` one of its Rows, read by attribute, not imported: the snapshot
# package renders itself through this module, and a layer below never imports the one above it.

_STAT_COLUMNS = ("mean", "std", "min", "max", "norm")


def format_bytes(n: int | None) -> str:
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(n: int) -> str:
    """>>> format_count(75_681_840)
    '75.7M'
    """
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.1f}{suffix}"
    return str(n)


def format_number(v: float | int | None) -> str:
    if v is None:
        return ""
    if isinstance(v, int):
        return str(v)
    return f"{v:.4g}"


def format_shape(shape: tuple[int, ...] | None) -> str:
    return "" if shape is None else str(tuple(shape))


def nonfinite_text(row: Any) -> str:
    if not row.stats:
        return ""
    parts = []
    if row.stats.get("nan_count"):
        parts.append(f"{row.stats['nan_count']} NaN")
    if row.stats.get("inf_count"):
        parts.append(f"{row.stats['inf_count']} Inf")
    return ", ".join(parts)


def summary_line(snap: Any) -> str:
    """One line: root class, variable count, elements, bytes, and the devices."""
    total = snap.totals["all"]
    dev = snap.device_summary
    if any(r.devices and r.devices != "host" and r.status != "abstract" for r in snap.rows):
        where = f"on {dev['count']}× {dev['device_kind']}"
    else:
        where = ("on the host" if any(r.devices == "host" for r in snap.rows) else
                 "(abstract: no arrays yet)" if any(r.status == "abstract" for r in snap.rows) else
                 "(no arrays on any device)")
    return (f"{snap.root_type}: {total['count']} variables, {format_count(total['size'])} elements, "
            f"{format_bytes(total['bytes'])} {where}")


def memory_line(snap: Any) -> str | None:
    """Device memory where the backend reports it (GPU, TPU; not CPU): in use / peak / limit.

    >>> from types import SimpleNamespace as NS
    >>> print(memory_line(NS(device_summary={"devices": [{"platform": "gpu", "id": 0, "bytes_in_use": 2 << 30,
    ...       "peak_bytes_in_use": 3 << 30, "bytes_limit": 16 << 30}]})))
    memory: gpu:0 2.0 GiB (peak 3.0 GiB) of 16.0 GiB
    """
    parts = []
    for d in snap.device_summary.get("devices", []):
        use, peak, limit = d.get("bytes_in_use"), d.get("peak_bytes_in_use"), d.get("bytes_limit")
        if use is None and peak is None and limit is None:
            continue
        text = f"{d.get('platform', 'dev')}:{d.get('id', '')} {format_bytes(use) if use is not None else '?'}"
        if peak is not None:
            text += f" (peak {format_bytes(peak)})"
        if limit is not None:
            text += f" of {format_bytes(limit)}"
        parts.append(text)
    return "memory: " + "; ".join(parts) if parts else None


def nonfinite_banner(snap: Any) -> str | None:
    row = snap.first_nonfinite
    if row is None:
        return None
    count = sum(1 for r in snap.rows if nonfinite_text(r))
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"NaN/Inf in {row.path_text}: {nonfinite_text(row)}{more}"


def _columns(snap: Any) -> list[tuple[str, callable]]:
    rows = snap.rows
    cols = [
        ("path", lambda r: r.path_text + ("  = " + ", ".join(map(path_text, r.aliases)) if r.aliases else "")),
        ("type", lambda r: r.type),
        ("shape", lambda r: format_shape(r.shape)),
        ("dtype", lambda r: r.dtype or ""),
        ("bytes", lambda r: format_bytes(r.nbytes)),
    ]
    if any(r.sharding for r in rows):
        cols.append(("sharding", lambda r: r.sharding or ""))
    if any(r.logical for r in rows):
        cols.append(("logical", lambda r: (r.logical or "") + (f" != {r.mismatch}" if r.mismatch else "")))
    if any(r.stats for r in rows):
        cols += [(name, lambda r, n=name: format_number((r.stats or {}).get(n))) for name in _STAT_COLUMNS]
    if any(nonfinite_text(r) for r in rows):
        cols.append(("nan/inf", nonfinite_text))
    if any(r.status != "ok" for r in rows):
        cols.append(("status", lambda r: "" if r.status == "ok" else r.status + (f": {r.note}" if r.note else "")))
    return cols


def text_table(snap: Any, max_rows: int | None = 50) -> str:
    cols = _columns(snap)
    shown = snap.rows if max_rows is None else snap.rows[:max_rows]
    cells = [[name for name, _ in cols]] + [[fn(r) for _, fn in cols] for r in shown]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = [summary_line(snap)]
    memory = memory_line(snap)
    if memory:
        lines.append(memory)
    banner = nonfinite_banner(snap)
    if banner:
        lines.append("!! " + banner)
    for row in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    if len(shown) < len(snap.rows):
        lines.append(f"… {len(snap.rows) - len(shown)} more rows")
    lines.append("totals: " + "; ".join(
        f"{name} {t['count']} ({format_count(t['size'])}, {format_bytes(t['bytes'])})"
        for name, t in snap.totals.items() if name != "all"))
    return "\n".join(lines)


# Inline styles: notebook front ends restyle tables (JupyterLab right-aligns every cell) and
# nbviewer/GitHub drop <style> blocks, but keep style attributes.
_LEFT = ' style="text-align:left"'
_RIGHT = ' style="text-align:right"'


def html_table(snap: Any, max_rows: int = 200) -> str:
    esc = html.escape
    cols = _columns(snap)
    numeric = {"bytes", *_STAT_COLUMNS}
    table = '<table style="border-collapse:collapse;font-size:12px;white-space:nowrap">'
    parts = ['<div class="nnx-lab-snapshot">', f"<div><b>{esc(summary_line(snap))}</b></div>"]
    memory = memory_line(snap)
    if memory:
        parts.append(f"<div>{esc(memory)}</div>")
    banner = nonfinite_banner(snap)
    if banner:
        parts.append(f'<div class="nnx-lab-warn" style="color:#d32f2f;font-weight:bold">{esc(banner)}</div>')
    parts.append(table + f"<tr><th{_LEFT}>type</th><th{_RIGHT}>count</th><th{_RIGHT}>elements</th>"
                 f"<th{_RIGHT}>bytes</th></tr>")
    for name, t in snap.totals.items():
        label = "total" if name == "all" else name
        parts.append(f"<tr><td{_LEFT}>{esc(label)}</td><td{_RIGHT}>{t['count']}</td>"
                     f"<td{_RIGHT}>{format_count(t['size'])}</td><td{_RIGHT}>{format_bytes(t['bytes'])}</td></tr>")
    parts.append("</table>")
    align = [(_RIGHT if name in numeric else _LEFT) for name, _ in cols]
    parts.append('<div style="max-height:420px;overflow:auto">' + table + "<tr>"
                 + "".join(f"<th{a}>{esc(n)}</th>" for a, (n, _) in zip(align, cols)) + "</tr>")
    for row in snap.rows[:max_rows]:
        parts.append("<tr>" + "".join(
            f"<td{a}>{esc(fn(row))}</td>" for a, (_, fn) in zip(align, cols)) + "</tr>")
    parts.append("</table></div>")
    if len(snap.rows) > max_rows:
        parts.append(f"<div>… {len(snap.rows) - max_rows} more rows</div>")
    parts.append("</div>")
    return "".join(parts)


# One colour per filter column, readable on light and dark backgrounds.
FILTER_COLORS = ("#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#e53935", "#6d4c41", "#3949ab")


def split_html(report, target: str = "model", names=None, max_rows: int = 200) -> str:
    """Static HTML of a split report: a column per filter, taken (●) and shadowed (○) marks."""
    esc = html.escape
    parts = ['<div class="nnx-lab-split">', f"<div><b>{esc(report.to_text().splitlines()[0])}</b></div>"]
    parts.append(f'<pre style="margin:4px 0">{esc(report.code(target, names))}</pre>')
    for line in report.problems():
        parts.append(f'<div class="nnx-lab-warn" style="color:#d32f2f">{esc(line)}</div>')
    table = '<table style="border-collapse:collapse;font-size:12px;white-space:nowrap">'
    head = "".join(f"<th{_LEFT}>{esc(n)}</th>" for n in ("path", "type", "shape", "dtype")) + f"<th{_RIGHT}>bytes</th>"
    for f in report.filters:
        color = FILTER_COLORS[f.index % len(FILTER_COLORS)]
        head += (f'<th style="text-align:center;color:{color}" title="{esc(f.label)}">'
                 f"{esc(f.name)}<br>{f.count}</th>")
    if not report.exhaustive:
        head += '<th style="text-align:center;color:#d32f2f">remainder</th>'
    parts.append('<div style="max-height:420px;overflow:auto">' + table + f"<tr>{head}</tr>")
    for r in report.rows[:max_rows]:
        row = r.row
        cells = "".join(f"<td{_LEFT}>{esc(v)}</td>" for v in (
            row.path_text + ("  = " + ", ".join(map(path_text, row.aliases)) if row.aliases else ""),
            row.type, format_shape(row.shape), row.dtype or ""))
        cells += f"<td{_RIGHT}>{format_bytes(row.nbytes)}</td>"
        for f in report.filters:
            color = FILTER_COLORS[f.index % len(FILTER_COLORS)]
            mark = "●" if r.taken_by == f.index else ("○" if f.index in r.matched_by else "")
            cells += f'<td style="text-align:center;color:{color}">{mark}</td>'
        if not report.exhaustive:
            cells += '<td style="text-align:center;color:#d32f2f">' + ("●" if r.taken_by is None else "") + "</td>"
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</table></div>")
    if len(report.rows) > max_rows:
        parts.append(f"<div>… {len(report.rows) - max_rows} more rows</div>")
    parts.append("</div>")
    return "".join(parts)
