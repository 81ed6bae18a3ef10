"""The memory ledger's and step plan's text and HTML (``nnx_lab.memory``); every user string escaped."""

from __future__ import annotations

import html
from typing import Any

from ._format import ALIGN_LEFT, ALIGN_RIGHT, count_noun, format_bytes

_COLUMNS = ("holder", "kind", "group", "device", "arrays", "bytes", "shared")


def device_line(d: Any) -> str:
    line = f"{d.device}: ledger {format_bytes(d.ledger_bytes)} = live arrays {format_bytes(d.live_bytes)} ({count_noun(d.arrays, 'buffer')})"
    stats = d.stats
    if not stats:
        return line + "; this backend has no memory_stats()"
    parts = []
    if "bytes_in_use" in stats:
        parts.append(
            f"in use {format_bytes(stats['bytes_in_use'])} ({format_bytes(d.not_in_arrays)} not in live arrays)"
        )
    if "peak_bytes_in_use" in stats:
        parts.append(f"peak {format_bytes(stats['peak_bytes_in_use'])}")
    if "bytes_limit" in stats:
        parts.append(f"limit {format_bytes(stats['bytes_limit'])}")
    return line + "; " + ", ".join(parts)


def shown_rows(ledger: Any, top: int) -> tuple[list, int]:
    """The rows of the ``top`` biggest holders (bytes counted there, then shared), and how many holders are left out."""
    size: dict[str, list] = {}
    for r in ledger.rows:
        s = size.setdefault(r.holder, [0, 0])
        s[0] += r.bytes
        s[1] += r.shared_bytes
    order = sorted(size, key=lambda h: (-size[h][0], -size[h][1], h))
    shown = set(order[:top])
    rows = [r for r in ledger.rows if r.holder in shown]
    rank = {h: i for i, h in enumerate(order)}
    rows.sort(key=lambda r: (rank[r.holder], -r.bytes, r.group, r.device))
    return rows, max(0, len(order) - top)


def _shared(r: Any) -> str:
    if not r.shared_with:
        return ""
    names = ", ".join(r.shared_with)
    if r.shared_arrays:
        return f"{format_bytes(r.shared_bytes)} shared with {names} (counted there)"
    return f"shared with {names}"


def _cells(r: Any) -> list[str]:
    return [r.holder, r.kind, r.group, r.device, str(r.arrays), format_bytes(r.bytes), _shared(r)]


def memory_text(ledger: Any, top: int) -> str:
    total = sum(d.ledger_bytes for d in ledger.devices)
    arrays = sum(d.arrays for d in ledger.devices)
    lines = [f"nnx_lab.memory: {format_bytes(total)} in {count_noun(arrays, 'live buffer')}"]
    lines += [device_line(d) for d in ledger.devices]
    if ledger.note:
        lines.append(ledger.note)
    rows, left = shown_rows(ledger, top)
    if rows:
        table = [list(_COLUMNS)] + [_cells(r) for r in rows]
        widths = [max(len(t[i]) for t in table) for i in range(len(_COLUMNS))]
        right = {4, 5}
        lines.append("")
        for t in table:
            cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(t, widths))]
            lines.append("  ".join(cells).rstrip())
    else:
        lines.append("(no live array is held)")
    if left:
        lines.append(f"… {count_noun(left, 'smaller holder')} not shown (to_text(top=…))")
    notes = sorted({r.note for r in rows if r.note})
    lines += [f"(unreached): {n}" for n in notes]
    lines += _freeing_lines(ledger, top)
    return "\n".join(lines)


def _freeing_lines(ledger: Any, top: int) -> list[str]:
    freeing = [f for f in ledger.freeing if f.bytes > 0][: max(1, min(top, 5))]
    if not freeing:
        return []
    width = max(len(f.statement) for f in freeing)
    out = ["", "What to free (nnx_lab frees nothing; each returns the buffers only those names reach):"]
    out += [f"  {f.statement.ljust(width)}  returns {format_bytes(f.bytes)}" for f in freeing]
    return out


def top_lines(ledger: Any, top: int) -> str:
    """The OOM hook's few lines: per device the ledger's total, the biggest holders, the freeing statements."""
    lines = ["nnx_lab: the device ran out of memory. What holds it:"]
    lines += ["  " + device_line(d) for d in ledger.devices]
    rows, _ = shown_rows(ledger, top)
    by_holder: dict[str, int] = {}
    for r in rows:
        by_holder[r.holder] = by_holder.get(r.holder, 0) + r.bytes
    for holder, nbytes in by_holder.items():
        if nbytes:  # a holder whose buffers are all counted under another name is in its freeing statement
            lines.append(f"  {holder}: {format_bytes(nbytes)}")
    lines += _freeing_lines(ledger, top)
    return "\n".join(lines)


def memory_html(ledger: Any, top: int) -> str:
    esc = html.escape
    parts = [f"<div><b>nnx_lab.memory</b>: {esc(device_line(d))}</div>" for d in ledger.devices]
    if ledger.note:
        parts.append(f"<div>{esc(ledger.note)}</div>")
    rows, left = shown_rows(ledger, top)
    head = "".join(f"<th{ALIGN_RIGHT if c in ('arrays', 'bytes') else ALIGN_LEFT}>{c}</th>" for c in _COLUMNS)
    body = "".join(
        "<tr>"
        + "".join(f"<td{ALIGN_RIGHT if i in (4, 5) else ALIGN_LEFT}>{esc(c)}</td>" for i, c in enumerate(_cells(r)))
        + "</tr>"
        for r in rows
    )
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if left:
        parts.append(f"<div>… {esc(count_noun(left, 'smaller holder'))} not shown</div>")
    for note in sorted({r.note for r in rows if r.note}):
        parts.append(f"<div>(unreached): {esc(note)}</div>")
    freeing = _freeing_lines(ledger, top)
    if freeing:
        parts.append(f"<pre>{esc(chr(10).join(freeing[1:]))}</pre>")
    return "<div>" + "".join(parts) + "</div>"


_PLAN_FIELDS = ("argument", "output", "alias", "temp", "generated_code")
_PLAN_LABELS = {
    "argument": "arguments",
    "output": "outputs",
    "alias": "aliased (donated)",
    "temp": "temporaries",
    "generated_code": "generated code",
}


def plan_text(plan: Any) -> str:
    lines = [f"nnx_lab.memory: {plan.step_name} compiled, not run ({plan.device})"]
    if plan.analysis is None:
        lines.append(plan.note)
        return "\n".join(lines)
    for f in _PLAN_FIELDS:
        lines.append(f"  {_PLAN_LABELS[f]:<18} {format_bytes(plan.analysis[f]):>10}")
    lines.append(f"  {'total':<18} {format_bytes(plan.total):>10}")
    lines.append(plan.verdict)
    for d in plan.donations:
        lines.append(
            f"  donate {d.argument}: saves up to {format_bytes(d.bytes)} (an output has its shapes and dtypes)"
        )
    if plan.note:
        lines.append(plan.note)
    return "\n".join(lines)


def plan_html(plan: Any) -> str:
    return f"<pre>{html.escape(plan_text(plan))}</pre>"
