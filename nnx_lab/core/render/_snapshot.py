"""A Snapshot as static text and HTML: the table a saved notebook shows, summary and memory lines,
the NaN/Inf banner; every user string escaped in HTML.

``snap`` is a ``core.snapshot.Snapshot`` and ``row`` one of its Rows, read by attribute, not
imported: the snapshot package renders itself through this module, and a layer below never
imports the one above it.
"""

from __future__ import annotations

import html
from typing import Any

from ..graph import path_text
from ._format import (ALIGN_LEFT, ALIGN_RIGHT, NONFINITE_LABEL, STAT_COLUMNS, STAT_LABELS, format_bytes, format_count,
                      format_shape, format_stat, nonfinite_text)


def path_cell(row: Any) -> str:
    """A row's path, followed by the other paths of a shared Variable (``row``: a snapshot Row).

    >>> from types import SimpleNamespace as NS
    >>> path_cell(NS(path_text="a.w", aliases=[("b", "w")]))
    'a.w  = b.w'
    """
    return row.path_text + ("  = " + ", ".join(map(path_text, row.aliases)) if row.aliases else "")


def summary_line(snap: Any) -> str:
    """One line of ``snap`` (a Snapshot): root class, variable count, elements, bytes, and the devices."""
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
    """The first row of ``snap`` (a Snapshot) with NaN/Inf, and how many more there are; None when none."""
    row = snap.first_nonfinite
    if row is None:
        return None
    count = sum(1 for r in snap.rows if nonfinite_text(r))
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"NaN/Inf in {row.path_text}: {nonfinite_text(row)}{more}"


def _columns(snap: Any) -> list[tuple[str, callable]]:
    rows = snap.rows
    cols = [
        ("path", path_cell),
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
        cols += [(STAT_LABELS[name], lambda r, n=name: format_stat((r.stats or {}).get(n))) for name in STAT_COLUMNS]
    if any(nonfinite_text(r) for r in rows):
        cols.append((NONFINITE_LABEL, nonfinite_text))
    if any(r.status != "ok" for r in rows):
        cols.append(("status", lambda r: "" if r.status == "ok" else r.status + (f": {r.note}" if r.note else "")))
    return cols


def text_table(snap: Any, max_rows: int | None = 50) -> str:
    """``snap`` (a Snapshot) as a text table, at most ``max_rows`` rows (None: all): ``repr(snapshot)``."""
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


def html_table(snap: Any, max_rows: int = 200) -> str:
    """``snap`` (a Snapshot) as an HTML table, every user string escaped: its ``_repr_html_``."""
    esc = html.escape
    cols = _columns(snap)
    numeric = {"bytes", *(STAT_LABELS[name] for name in STAT_COLUMNS)}
    table = '<table style="border-collapse:collapse;font-size:12px;white-space:nowrap">'
    parts = ['<div class="nnx-lab-snapshot">', f"<div><b>{esc(summary_line(snap))}</b></div>"]
    memory = memory_line(snap)
    if memory:
        parts.append(f"<div>{esc(memory)}</div>")
    banner = nonfinite_banner(snap)
    if banner:
        parts.append(f'<div class="nnx-lab-warn" style="color:#d32f2f;font-weight:bold">{esc(banner)}</div>')
    parts.append(table + f"<tr><th{ALIGN_LEFT}>type</th><th{ALIGN_RIGHT}>count</th><th{ALIGN_RIGHT}>elements</th>"
                 f"<th{ALIGN_RIGHT}>bytes</th></tr>")
    for name, t in snap.totals.items():
        label = "total" if name == "all" else name
        parts.append(f"<tr><td{ALIGN_LEFT}>{esc(label)}</td><td{ALIGN_RIGHT}>{t['count']}</td>"
                     f"<td{ALIGN_RIGHT}>{format_count(t['size'])}</td><td{ALIGN_RIGHT}>{format_bytes(t['bytes'])}</td></tr>")
    parts.append("</table>")
    align = [(ALIGN_RIGHT if name in numeric else ALIGN_LEFT) for name, _ in cols]
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
