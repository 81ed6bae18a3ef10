"""A Snapshot as static text and HTML: the table a saved notebook shows, summary and memory lines,
the NaN/Inf banner; every user string escaped in HTML.

``snap`` is a ``core.snapshot.Snapshot`` and ``row`` one of its Rows, read by attribute, not
imported: the snapshot package renders itself through this module, and a layer below never
imports the one above it.
"""

from __future__ import annotations

import html
from typing import Any, Callable

import numpy as np

from ..graph import path_text
from ._format import (
    ALIGN_LEFT,
    ALIGN_RIGHT,
    NONFINITE_LABEL,
    SERIES_LABELS,
    STAT_COLUMNS,
    STAT_LABELS,
    format_bytes,
    format_count,
    format_number,
    format_shape,
    format_stat,
    nonfinite_text,
)

_GRAD, _UPDATE = "grad", "update"  # the series names of core.training._series (GRAD, UPDATE)
_UNMATCHED_SHOWN = 20


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
    checkpoint = getattr(snap, "checkpoint", None)
    if checkpoint is not None:  # an Orbax checkpoint's arrays are files, on no device yet: what the files take
        disk = checkpoint.get("disk_bytes")
        where = f"of arrays, {format_bytes(disk)} on disk" if disk else "on disk"
    elif any(r.devices and r.devices != "host" and r.status != "abstract" for r in snap.rows):
        where = f"on {dev['count']}× {dev['device_kind']}"
    else:
        where = (
            "on the host"
            if any(r.devices == "host" for r in snap.rows)
            else "(abstract: no arrays yet)"
            if any(r.status == "abstract" for r in snap.rows)
            else "(no arrays on any device)"
        )
    return (
        f"{snap.root_type}: {total['count']} variables, {format_count(total['size'])} elements, "
        f"{format_bytes(total['bytes'])} {where}"
    )


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


def _series(snap: Any) -> Any:
    series = getattr(snap, "series", None)
    return (
        series
        if series is not None and series.names and all(m.shape[0] == len(snap.rows) for m in series.matrices.values())
        else None
    )


def _series_columns(snap: Any) -> list[tuple[str, Callable[[Any], str]]]:
    """The series columns the live viewer shows (‖grad‖, ‖g‖/‖θ‖, ‖Δθ‖/‖θ‖), then each optimizer
    state's norm (``‖mu‖``: the viewer shows it under its "statistics of" switch)."""
    series = _series(snap)
    if series is None:
        return []
    rows = snap.rows
    index = {id(r): i for i, r in enumerate(rows)}
    param_norm = np.array([np.nan if (r.stats or {}).get("norm") is None else r.stats["norm"] for r in rows], float)

    def column(label: str, values: np.ndarray) -> tuple[str, Callable[[Any], str]]:
        shown = [None if v != v else v for v in values.tolist()]
        return label, lambda r: format_stat(shown[index[id(r)]])

    def norms(name: str) -> np.ndarray:
        values = (series.stats_dict(name, i)["norm"] for i in range(len(rows)))
        return np.array([np.nan if v is None else v for v in values], float)

    cols = []
    if _GRAD in series.names:
        cols += [
            column(SERIES_LABELS["g_norm"][0], norms(_GRAD)),
            column(SERIES_LABELS["g_ratio"][0], series.ratio(_GRAD, param_norm)),
        ]
    if _UPDATE in series.names:
        cols.append(column(SERIES_LABELS["u_ratio"][0], series.ratio(_UPDATE, param_norm)))
    cols += [column(f"\u2016{name}\u2016", norms(name)) for name in series.names if name not in (_GRAD, _UPDATE)]
    return cols


def series_lines(snap: Any) -> list[str]:
    """What the live viewer's series line says (optimizer step, stale series, problems) and the
    leaves matched to no Variable, as text lines (none without series)."""
    series = getattr(snap, "series", None)
    if series is None:
        return []
    parts = []
    if series.opt_step is not None:
        parts.append(f"optimizer step {series.opt_step:,}")
    for name in series.names:
        if name in series.stale:
            step = series.steps.get(name)
            since = getattr(series, "since", {}).get(name, "none since")
            parts.append(f"{name} from step {step:,} ({since})" if isinstance(step, int) else f"{name} ({since})")
    parts += list(series.problems)
    lines = [" \u00b7 ".join(parts)] if parts else []
    unmatched = series.unmatched
    if unmatched:
        total = len(unmatched) + series.unmatched_more
        lines.append(f"{total} lea{'f' if total == 1 else 'ves'} matched to no Variable:")
        for name, text, what, stats in unmatched[:_UNMATCHED_SHOWN]:
            numbers = ", ".join(
                f"{k} {format_number(stats[k])}" for k in ("mean", "max", "norm") if stats and stats.get(k) is not None
            )
            lines.append(
                f"  {name}: {text}" + (f" \u2014 {what}" if what else "") + (f" ({numbers})" if numbers else "")
            )
        if total > _UNMATCHED_SHOWN:
            lines.append(f"  \u2026 {total - _UNMATCHED_SHOWN} more")
    return lines


def status_text(row: Any) -> str:
    """A row's status cell: its status unless ``ok``, and its note.

    >>> from types import SimpleNamespace as R
    >>> status_text(R(status="ok", note=None)), status_text(R(status="deleted", note="donated"))
    ('', 'deleted: donated')
    >>> status_text(R(status="ok", note="metadata tag: its repr raised ValueError"))
    'metadata tag: its repr raised ValueError'
    """
    status = "" if row.status == "ok" else row.status
    return ": ".join(part for part in (status, row.note or "") if part)


def _columns(snap: Any, series: bool = False) -> list[tuple[str, Callable[[Any], str]]]:
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
    if series:
        cols += _series_columns(snap)
    if any(nonfinite_text(r) for r in rows):
        cols.append((NONFINITE_LABEL, nonfinite_text))
    if any(r.status != "ok" or r.note for r in rows):  # a note on a live row too (a metadata repr that raised)
        cols.append(("status", status_text))
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
    lines.append(
        "totals: "
        + "; ".join(
            f"{name} {t['count']} ({format_count(t['size'])}, {format_bytes(t['bytes'])})"
            for name, t in snap.totals.items()
            if name != "all"
        )
    )
    return "\n".join(lines)


def html_table(snap: Any, max_rows: int = 200, series: bool = False) -> str:
    """``snap`` (a Snapshot) as an HTML table, every user string escaped: its ``_repr_html_``. ``series``:
    with the series beside the rows (gradients, update ratio, optimizer state: a viewer's saved copy).
    (A snapshot's own text and HTML leave them out: a measured update arrives when its program is
    compiled, and a printed table must not depend on when that was.)"""
    esc = html.escape
    cols = _columns(snap, series)
    numeric = {
        "bytes",
        *(STAT_LABELS[name] for name in STAT_COLUMNS),
        *(name for name, _ in cols if name.startswith("\u2016")),
    }  # the series' norms and ratios
    table = '<table style="border-collapse:collapse;font-size:12px;white-space:nowrap">'
    parts = ['<div class="nnx-lab-snapshot">', f"<div><b>{esc(summary_line(snap))}</b></div>"]
    memory = memory_line(snap)
    if memory:
        parts.append(f"<div>{esc(memory)}</div>")
    banner = nonfinite_banner(snap)
    if banner:
        parts.append(f'<div class="nnx-lab-warn" style="color:#d32f2f;font-weight:bold">{esc(banner)}</div>')
    parts.append(
        table + f"<tr><th{ALIGN_LEFT}>type</th><th{ALIGN_RIGHT}>count</th><th{ALIGN_RIGHT}>elements</th>"
        f"<th{ALIGN_RIGHT}>bytes</th></tr>"
    )
    for name, t in snap.totals.items():
        label = "total" if name == "all" else name
        parts.append(
            f"<tr><td{ALIGN_LEFT}>{esc(label)}</td><td{ALIGN_RIGHT}>{t['count']}</td>"
            f"<td{ALIGN_RIGHT}>{format_count(t['size'])}</td><td{ALIGN_RIGHT}>{format_bytes(t['bytes'])}</td></tr>"
        )
    parts.append("</table>")
    align = [(ALIGN_RIGHT if name in numeric else ALIGN_LEFT) for name, _ in cols]
    parts.append(
        '<div style="max-height:420px;overflow:auto">'
        + table
        + "<tr>"
        + "".join(f"<th{a}>{esc(n)}</th>" for a, (n, _) in zip(align, cols))
        + "</tr>"
    )
    for row in snap.rows[:max_rows]:
        parts.append("<tr>" + "".join(f"<td{a}>{esc(fn(row))}</td>" for a, (_, fn) in zip(align, cols)) + "</tr>")
    parts.append("</table></div>")
    if len(snap.rows) > max_rows:
        parts.append(f"<div>… {len(snap.rows) - max_rows} more rows</div>")
    if series:
        parts += [
            f'<div class="nnx-lab-series" style="white-space:pre">{esc(line)}</div>' for line in series_lines(snap)
        ]
    parts.append("</div>")
    return "".join(parts)
