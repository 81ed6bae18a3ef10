"""The memory widget's payload: the ledger as a tree (device -> holder -> group), every text written
here so the front end formats no byte count of its own; plain JSON, no array.

``rows`` are listed depth first (``depth`` 0 a device, 1 a holder, 2 its group: a Variable type, an
optimizer entry, ``array``); ``share`` is a row's bytes over its device's ``scale``: the device's
``bytes_limit`` where ``memory_stats()`` has one, else the device's live arrays' total (CPU).
"""

from __future__ import annotations

from typing import Any

from ._format import count_noun, format_bytes
from ._memory import device_line, shown_rows

FREEING_TITLE = "What to free: copy a statement into a cell (nnx_lab frees nothing)"
FREEING_NOTE = "each returns the buffers only those names reach"


def _row(label: str, depth: int, kind: str, arrays: int, nbytes: int, info: dict, shared: str, note: str) -> dict:
    """One row of the tree; ``info``: its device's (``scale``, ``scale_text``)."""
    scale = info["scale"]
    return {
        "label": label,
        "depth": depth,
        "kind": kind,
        "arrays": arrays,
        "bytes": nbytes,
        "bytes_text": format_bytes(nbytes),
        "share": min(1.0, nbytes / scale) if scale > 0 else 0.0,
        "share_text": f"{format_bytes(nbytes)} of {info['scale_text']}",
        "shared": shared,
        "note": note,
    }


def _shared_text(shared_bytes: int, names: list[str]) -> str:
    if not names:
        return ""
    joined = ", ".join(names)
    return (
        f"{format_bytes(shared_bytes)} shared with {joined} (counted there)"
        if shared_bytes
        else f"shared with {joined}"
    )


def _device(d: Any) -> dict:
    limit = d.stats.get("bytes_limit")
    scale = limit if limit else d.live_bytes
    return {
        "device": d.device,
        "line": device_line(d),
        "scale": scale,
        "scale_text": f"{format_bytes(scale)} {'limit' if limit else 'in live arrays (no limit on this backend)'}",
    }


def memory_payload(ledger: Any) -> dict:
    """What the memory widget draws for ``ledger`` (its ``top`` biggest holders)."""
    total = sum(d.ledger_bytes for d in ledger.devices)
    arrays = sum(d.arrays for d in ledger.devices)
    rows_shown, left = shown_rows(ledger, ledger.top)
    devices = [_device(d) for d in ledger.devices]
    rows: list[dict] = []
    for d, info in zip(ledger.devices, devices):
        rows.append(_row(d.device, 0, "device", d.arrays, d.ledger_bytes, info, "", info["line"]))
        holders: dict[str, list] = {}
        for r in rows_shown:
            if r.device == d.device:
                holders.setdefault(r.holder, []).append(r)
        for name, groups in holders.items():
            shared = _shared_text(
                sum(r.shared_bytes for r in groups), sorted({n for r in groups for n in r.shared_with})
            )
            note = next((r.note for r in groups if r.note), "")
            count = sum(r.arrays for r in groups)
            rows.append(_row(name, 1, groups[0].kind, count, sum(r.bytes for r in groups), info, shared, note))
            for r in groups:
                shared = _shared_text(r.shared_bytes, list(r.shared_with))
                rows.append(_row(r.group, 2, "", r.arrays, r.bytes, info, shared, ""))
    freeing = [f for f in ledger.freeing if f.bytes > 0][: max(1, min(ledger.top, 5))]
    return {
        "title": f"nnx_lab.memory: {format_bytes(total)} in {count_noun(arrays, 'live buffer')}",
        "note": ledger.note,
        "devices": devices,
        "rows": rows,
        "left": f"… {count_noun(left, 'smaller holder')} not shown (ledger.select(top=…))" if left else "",
        "empty": "" if rows_shown else "(no live array is held)",
        "freeing_title": FREEING_TITLE if freeing else "",
        "freeing_note": FREEING_NOTE if freeing else "",
        "freeing": [
            {
                "statement": f.statement,
                "bytes": f.bytes,
                "bytes_text": f"returns {format_bytes(f.bytes)}",
                "holders": list(f.holders),
            }
            for f in freeing
        ],
    }
