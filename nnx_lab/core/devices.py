"""Where arrays live: sharding text, device lists, and a device/memory summary.

All of this reads metadata (``Array.sharding``, ``Device.memory_stats()``); no array
data moves.

>>> compress_ids([0, 1, 2, 3, 5, 7, 8])
'0-3,5,7-8'
"""

from __future__ import annotations

from typing import Any, Iterable

import jax

from . import compat


def compress_ids(ids: Iterable[int]) -> str:
    ids = sorted(set(ids))
    runs: list[str] = []
    start = prev = None
    for i in ids + [None]:
        if start is not None and (i is None or i != prev + 1):
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return ",".join(runs)


def devices_text(devices: Iterable[Any]) -> str | None:
    """``cpu:0`` / ``gpu:0-7``: platform and ids of the devices holding an array."""
    by_platform: dict[str, list[int]] = {}
    for d in devices:
        by_platform.setdefault(d.platform, []).append(d.id)
    if not by_platform:
        return None
    return " ".join(f"{p}:{compress_ids(ids)}" for p, ids in sorted(by_platform.items()))


def sharding_text(sharding: Any) -> str | None:
    """The PartitionSpec (and mesh) of a multi-device sharding; None on one device.

    >>> import jax
    >>> print(sharding_text(jax.sharding.SingleDeviceSharding(jax.devices()[0])))
    None
    """
    if sharding is None:
        return None
    if isinstance(sharding, jax.sharding.NamedSharding):
        mesh = sharding.mesh
        axes = ", ".join(f"{name}={size}" for name, size in zip(mesh.axis_names, mesh.axis_sizes))
        return f"{compat.spec_text(sharding.spec)} @ mesh({axes})"
    if len(sharding.device_set) <= 1:
        return None
    return repr(sharding)


def placement(value: Any) -> tuple[str | None, str | None]:
    """(sharding text, devices text) of a jax.Array or ShapeDtypeStruct; host values are 'host'."""
    if isinstance(value, jax.ShapeDtypeStruct):
        sharding = getattr(value, "sharding", None)
        if sharding is None:
            return None, None
        return sharding_text(sharding), devices_text(sharding.device_set)
    if isinstance(value, jax.Array):
        sharding = value.sharding
        return sharding_text(sharding), devices_text(sharding.device_set)
    return None, "host"


def device_summary(devices: Iterable[Any] | None = None) -> dict:
    """Platform, kind, count and per-device memory (in use / peak / limit where reported).

    ``devices`` defaults to the default backend's local devices. CPU backends report
    no memory statistics; the memory entries are then ``None``.
    """
    devices = sorted(devices if devices is not None else jax.local_devices(),
                     key=lambda d: (d.platform, d.id))
    entries = []
    for d in devices:
        try:
            mem = d.memory_stats() or {}
        except Exception:  # some backends raise instead of returning None
            mem = {}
        entries.append({
            "id": d.id,
            "platform": d.platform,
            "kind": d.device_kind,
            "bytes_in_use": mem.get("bytes_in_use"),
            "peak_bytes_in_use": mem.get("peak_bytes_in_use"),
            "bytes_limit": mem.get("bytes_limit"),
        })
    platforms = sorted({e["platform"] for e in entries})
    kinds = sorted({e["kind"] for e in entries})
    return {
        "platform": ",".join(platforms),
        "device_kind": ",".join(kinds),
        "count": len(entries),
        "devices": entries,
    }
