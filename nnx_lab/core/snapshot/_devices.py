"""Where arrays live: sharding text, device lists, and a device/memory summary.

All of this reads metadata (``Array.sharding``, ``Device.memory_stats()``); no array
data moves.

>>> compress_ids([0, 1, 2, 3, 5, 7, 8])
'0-3,5,7-8'
"""

from __future__ import annotations

import logging
import math
from typing import Iterable

import jax

from .. import compat
from ..compat import Device
from ..render import format_bytes

_log = logging.getLogger("nnx_lab")


def compress_ids(ids: Iterable[int]) -> str:
    """Device ids as runs: ``0-3,6``."""
    runs: list[str] = []
    start = prev = -2
    for i in sorted(set(ids)):
        if i != prev + 1:
            if prev >= start >= 0:
                runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = i
        prev = i
    if prev >= start >= 0:
        runs.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(runs)


def devices_text(devices: Iterable[Device]) -> str | None:
    """``cpu:0`` / ``gpu:0-7``: platform and ids of the devices holding an array."""
    by_platform: dict[str, list[int]] = {}
    for d in devices:
        by_platform.setdefault(d.platform, []).append(d.id)
    if not by_platform:
        return None
    return " ".join(f"{p}:{compress_ids(ids)}" for p, ids in sorted(by_platform.items()))


def sharding_text(sharding: jax.sharding.Sharding | None) -> str | None:
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


def _devices_of_sharding(sharding: jax.sharding.Sharding) -> str | None:
    mesh = getattr(sharding, "mesh", None)
    if isinstance(mesh, jax.sharding.AbstractMesh):
        # nnx.eval_shape under a mesh: no devices yet, only the mesh's shape.
        return f"abstract mesh \u00d7{math.prod(mesh.axis_sizes)}"
    try:
        return devices_text(sharding.device_set)
    except (AttributeError, RuntimeError, TypeError, ValueError):  # a sharding kind that cannot name its devices
        _log.debug("nnx_lab: a sharding without devices: %r", type(sharding).__name__, exc_info=True)
        return None


def placement(value: object) -> tuple[str | None, str | None]:
    """(sharding text, devices text) of a jax.Array or ShapeDtypeStruct; host values are 'host'.

    >>> import jax, jax.numpy as jnp
    >>> mesh = jax.sharding.AbstractMesh((2, 4), ("data", "model"))
    >>> spec = jax.ShapeDtypeStruct((8, 4), jnp.float32,
    ...                             sharding=jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data")))
    >>> placement(spec)
    ("P('data',) @ mesh(data=2, model=4)", 'abstract mesh \u00d78')
    """
    if isinstance(value, jax.ShapeDtypeStruct):
        sharding = getattr(value, "sharding", None)
        if sharding is None:
            return None, None
        return _placement_of(sharding)
    if isinstance(value, jax.Array):
        return _placement_of(value.sharding)
    return None, "host"


# sharding -> (text, devices): a model's arrays share a few shardings
_placements: dict[jax.sharding.Sharding, tuple[str | None, str | None]] = {}


def _placement_of(sharding: jax.sharding.Sharding) -> tuple[str | None, str | None]:
    try:
        return _placements[sharding]
    except (KeyError, TypeError):  # new, or a sharding that cannot be hashed
        pass
    found = sharding_text(sharding), _devices_of_sharding(sharding)
    if len(_placements) > 4096:
        _placements.clear()
    try:
        _placements[sharding] = found
    except TypeError:
        pass
    return found


def logical_axes(metadata: dict) -> tuple | None:
    """The logical sharding annotation a Variable carries (flax's ``out_sharding``; older flax
    calls it ``sharding_names`` or ``sharding``), e.g. ``('embed', 'mlp')``."""
    for key in compat.SHARDING_KEYS:
        names = metadata.get(key)
        if isinstance(names, (tuple, list)) and names:
            return tuple(names)
    return None


def annotation_check(value: object, metadata: dict) -> tuple[str | None, str | None]:
    """(the logical annotation as text, a one-line disagreement or None).

    The annotation is turned into mesh axes as flax does (``nnx.get_partition_spec``: the logical
    axis rules in effect and the Variable's ``sharding_rules``), then compared with where the
    array actually is. Mesh axes of size 1 shard nothing and are ignored on both sides.

    >>> import jax, jax.numpy as jnp
    >>> from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P
    >>> mesh = AbstractMesh((2, 4), ("data", "model"))
    >>> x = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("data")))
    >>> annotation_check(x, {"out_sharding": ("data", None)})
    ("('data', None)", None)
    >>> print(annotation_check(x, {"out_sharding": (None, "model")})[1])
    placed P('data',) but annotated P(None, 'model')
    >>> print(annotation_check(x, {"out_sharding": ("embed", "mlp")})[1])
    annotated P('embed', 'mlp'): the mesh has no axis embed, mlp (no logical axis rules set?)
    """
    names = logical_axes(metadata)
    if names is None:
        return None, None
    text = repr(names)
    ndim = len(getattr(value, "shape", ()) or ())
    try:
        expected = compat.partition_spec_of(metadata, names)
    except Exception as e:  # noqa: BLE001 - boundary: the user's annotation and rules; the row's note says why
        _log.debug("nnx_lab: logical axes %s not understood", text, exc_info=True)
        return text, f"annotation not understood: {type(e).__name__}: {e}"
    sharding = getattr(value, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or not isinstance(sharding, jax.sharding.NamedSharding):
        if isinstance(value, jax.Array) and jax.device_count() > 1 and _dims(expected, ndim, None) != (None,) * ndim:
            return text, f"annotated {compat.spec_text(expected)} but on one device"
        return text, None
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    unknown = [a for dim in _dims(expected, ndim, None) for a in (dim or ()) if a not in sizes]
    if unknown:
        return text, (
            f"annotated {compat.spec_text(expected)}: the mesh has no axis {', '.join(unknown)}"
            " (no logical axis rules set?)"
        )
    if _dims(expected, ndim, sizes) != _dims(sharding.spec, ndim, sizes):
        return text, f"placed {compat.spec_text(sharding.spec)} but annotated {compat.spec_text(expected)}"
    return text, None


def _dims(spec: jax.sharding.PartitionSpec, ndim: int, sizes: dict | None) -> tuple:
    """A PartitionSpec as one tuple of mesh axes (or None) per array dimension."""
    out = []
    for i in range(ndim):
        entry = spec[i] if i < len(spec) else None
        axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        if sizes is not None:
            axes = tuple(a for a in axes if sizes.get(a, 0) != 1)
        out.append(axes or None)
    return tuple(out)


def device_summary(devices: Iterable[Device] | None = None) -> dict:
    """Platform, kind, count and per-device memory (in use / peak / limit where reported).

    ``devices`` defaults to the default backend's local devices. CPU backends report
    no memory statistics; the memory entries are then ``None``.
    """
    devices = sorted(devices if devices is not None else jax.local_devices(), key=lambda d: (d.platform, d.id))
    entries = []
    for d in devices:
        try:
            mem = d.memory_stats() or {}
        except (RuntimeError, AttributeError):  # some backends raise (NotImplementedError) instead of returning None
            _log.debug("nnx_lab: no memory statistics for %s", d, exc_info=True)
            mem = {}
        entries.append(
            {
                "id": d.id,
                "platform": d.platform,
                "kind": d.device_kind,
                "bytes_in_use": mem.get("bytes_in_use"),
                "peak_bytes_in_use": mem.get("peak_bytes_in_use"),
                "bytes_limit": mem.get("bytes_limit"),
            }
        )
    platforms = sorted({e["platform"] for e in entries})
    kinds = sorted({e["kind"] for e in entries})
    return {
        "platform": ",".join(platforms),
        "device_kind": ",".join(kinds),
        "count": len(entries),
        "devices": entries,
    }


def on_disk(info: dict) -> dict:
    """A checkpoint's :func:`device_summary`: its arrays are files, on no device (the viewer's device
    strip says "on disk", with the bytes the files take when known)."""
    size = info.get("disk_bytes")
    return {
        "platform": "on disk" + (f" ({format_bytes(size)})" if size else ""),
        "device_kind": "",
        "count": 0,
        "devices": [],
    }
