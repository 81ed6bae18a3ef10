"""Static renderings of a Snapshot: a text table and an HTML table, every user string escaped.

This module is the one source of how numbers and sizes are written: the browser's
``js/src/shared/format.js`` implements the same two rules (:func:`format_number`,
:func:`format_bytes`) and its tests compare it with this module's output on a corpus of values
(``tools/js_generate.py`` writes the expected strings), so a saved notebook's static table and the
live widget show the same text for the same model.

>>> format_bytes(302_700_000)
'288.7 MiB'
>>> format_number(0.000123456), format_number(12345678.0), format_number(None)
('1.235e-4', '1.235e+7', '')
"""

from __future__ import annotations

import decimal
import fractions
import html
import math
from typing import Any

import numpy as np

from .graph import path_text

# ``snap`` is a core.snapshot.Snapshot and ``row`` one of its Rows, read by attribute, not imported: the snapshot
# package renders itself through this module, and a layer below never imports the one above it.

#: The statistic columns of a table (static here, live in the viewer) and each statistic's label.
STAT_COLUMNS = ("mean", "std", "min", "max", "norm")
STAT_LABELS = {"mean": "mean", "std": "std", "min": "min", "max": "max", "norm": "norm", "abs_max": "abs max"}
#: The label of the NaN/Inf counts column.
NONFINITE_LABEL = "NaN/Inf"


#: Significant digits of every statistic shown (the payload is rounded to as many).
DIGITS = 4
#: Byte units, 1024 apart.
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_HALF_UP = decimal.Context(prec=DIGITS, rounding=decimal.ROUND_HALF_UP)


def format_bytes(n: int | float | None) -> str:
    """A byte count in binary units, one decimal above 1023 B (the unit chosen after rounding).

    Ties round away from zero on the exact value, as JavaScript's ``toFixed`` does.

    >>> [format_bytes(n) for n in (0, 1023, 1024, 1536, 1048575, 2**50 * 3)]
    ['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '1.0 MiB', '3.0 PiB']
    """
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return ""
    if n < 0:
        return "-" + format_bytes(-n)
    exact = fractions.Fraction(n)
    if exact < 1024:
        return f"{math.floor(exact + fractions.Fraction(1, 2))} B"
    for power, unit in enumerate(BYTE_UNITS[1:], 1):
        tenths = math.floor(exact * 10 / 1024**power + fractions.Fraction(1, 2))  # half up, exact
        if tenths < 10240 or unit == BYTE_UNITS[-1]:
            return f"{tenths // 10}.{tenths % 10} {unit}"
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
    """A statistic to :data:`DIGITS` significant digits, trailing zeros dropped.

    Rounded half away from zero on the exact value (as JavaScript's ``toExponential``); plain
    notation when the rounded value's decimal exponent is in -3..3, else ``1.235e+7``/``-3.5e-5``.

    >>> [format_number(x) for x in (0.264, 1234.5, 12345, 0.001, -3.5e-5, -0.0, float("nan"), float("-inf"))]
    ['0.264', '1235', '1.235e+4', '0.001', '-3.5e-5', '0', 'NaN', '-inf']
    """
    if v is None:
        return ""
    x = float(v)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    digits = _HALF_UP.plus(decimal.Decimal(abs(x)))
    mantissa, exponent = f"{digits:.{DIGITS - 1}e}".split("e")
    e = int(exponent)
    sign = "-" if x < 0 else ""
    if -3 <= e < DIGITS:
        return sign + _trim(f"{digits:.{DIGITS - 1 - e}f}")
    return f"{sign}{_trim(mantissa)}e{'+' if e >= 0 else '-'}{abs(e)}"


def format_stat(v: float | int | None) -> str:
    """A statistic as the live widget shows it: rounded as the browser's payload is
    (``Snapshot.to_dict``: ``round_significant``, then ``.4g``, both half to even), then
    :func:`format_number`.

    >>> format_stat(1234.5), format_number(1234.5)
    ('1234', '1235')
    """
    if v is None:
        return ""
    rounded = float(round_significant([float(v)], DIGITS)[0])
    return format_number(float(f"{rounded:.{DIGITS}g}") if math.isfinite(rounded) else rounded)


def round_significant(values: Any, digits: int = 4) -> np.ndarray:
    """Round to ``digits`` significant digits, elementwise (NaN/Inf/0 unchanged).

    The one rounding used for the browser payload and for the history behind sparklines, so the
    two always agree.

    >>> round_significant([3.168886, -0.000123456, 0.0, float("nan"), 123456.0]).tolist()
    [3.169, -0.0001235, 0.0, nan, 123500.0]
    """
    a = np.asarray(values, np.float64)
    finite = np.isfinite(a) & (a != 0)
    exponent = np.floor(np.log10(np.abs(np.where(finite, a, 1.0))))
    scale = 10.0 ** (exponent - (digits - 1))
    return np.where(finite, np.round(a / scale) * scale, a)


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


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
        cols += [(STAT_LABELS[name], lambda r, n=name: format_stat((r.stats or {}).get(n))) for name in STAT_COLUMNS]
    if any(nonfinite_text(r) for r in rows):
        cols.append((NONFINITE_LABEL, nonfinite_text))
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
    numeric = {"bytes", *(STAT_LABELS[name] for name in STAT_COLUMNS)}
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
