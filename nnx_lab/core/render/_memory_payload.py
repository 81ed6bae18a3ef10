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


def _share(nbytes: int, scale: int) -> float:
    return min(1.0, nbytes / scale) if scale > 0 else 0.0


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
        scale = info["scale"]
        mine = [r for r in rows_shown if r.device == d.device]
        rows.append(
            {
                "label": d.device,
                "depth": 0,
                "kind": "device",
                "arrays": d.arrays,
                "bytes": d.ledger_bytes,
                "bytes_text": format_bytes(d.ledger_bytes),
                "share": _share(d.ledger_bytes, scale),
                "share_text": f"{format_bytes(d.ledger_bytes)} of {info['scale_text']}",
                "shared": "",
                "note": info["line"],
            }
        )
        holders: dict[str, list] = {}
        for r in mine:
            holders.setdefault(r.holder, []).append(r)
        for name, groups in holders.items():
            nbytes = sum(r.bytes for r in groups)
            shared_bytes = sum(r.shared_bytes for r in groups)
            names = sorted({n for r in groups for n in r.shared_with})
            rows.append(
                {
                    "label": name,
                    "depth": 1,
                    "kind": groups[0].kind,
                    "arrays": sum(r.arrays for r in groups),
                    "bytes": nbytes,
                    "bytes_text": format_bytes(nbytes),
                    "share": _share(nbytes, scale),
                    "share_text": f"{format_bytes(nbytes)} of {info['scale_text']}",
                    "shared": _shared_text(shared_bytes, names),
                    "note": next((r.note for r in groups if r.note), ""),
                }
            )
            for r in groups:
                rows.append(
                    {
                        "label": r.group,
                        "depth": 2,
                        "kind": "",
                        "arrays": r.arrays,
                        "bytes": r.bytes,
                        "bytes_text": format_bytes(r.bytes),
                        "share": _share(r.bytes, scale),
                        "share_text": f"{format_bytes(r.bytes)} of {info['scale_text']}",
                        "shared": _shared_text(r.shared_bytes, list(r.shared_with)),
                        "note": "",
                    }
                )
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
