"""``compare(a, b)``: match the sides, compute the values where the arrays live, build the rows."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any

from .._text import first_line, quote_repr
from ..graph import Path, path_text
from ._match import Match, key_of, match_sides
from ._sides import Entry, Side, metadata_axis, resolve_side
from ._values import Partials, device_partials, stream_partials

__all__ = ["CompareRow", "ModuleRow", "compute"]

_log = logging.getLogger("nnx_lab")

#: Statuses a row can have, and what each means.
STATUSES = {
    "identical": "bit for bit the same",
    "equal": "every element within tol (not bit-identical)",
    "changed": "some elements differ by more than tol",
    "nan": "values compared; a or b holds NaN (see the note)",
    "missing": "in a only: b has nothing to load into it",
    "unexpected": "in b only: a has no place for it",
    "shape": "shapes differ: not loadable, values not compared",
    "tied": "a tied (shared) weight on one side, a separate array on the other",
    "abstract": "one side has no data (nnx.eval_shape, a snapshot): structure only",
    "tracer": "a jax tracer: no data",
    "prng_key": "PRNG key arrays: compared bit for bit only",
    "non_numeric": "not a numeric array: not compared",
    "deleted": "a deleted or donated buffer",
    "error": "the values could not be read or compared; see the note",
}
_STRUCTURAL = ("missing", "unexpected", "shape", "tied", "error")


@dataclasses.dataclass(frozen=True)
class CompareRow:
    """One Variable of the comparison (or one layer of a stacked one: ``layer`` set)."""

    path: str  # a's path text (b's for a row in b only)
    path_b: str | None  # b's path text where it differs (map=)
    status: str
    mismatch: str | None  # dtype / Variable type / sharding differences, "; "-joined
    type_a: str | None
    type_b: str | None
    shape_a: tuple | None
    shape_b: tuple | None
    dtype_a: str | None
    dtype_b: str | None
    size: int | None
    rel_change: float | None = None  # ||a-b|| / ||a||
    max_abs: float | None = None  # max |a-b|
    cosine: float | None = None
    frac_changed: float | None = None  # of the elements, beyond tol
    identical: bool | None = None  # bit for bit
    note: str | None = None
    layer: int | None = None
    layer_of: str | None = None  # a layer's row: its stacked Variable's path


@dataclasses.dataclass(frozen=True)
class ModuleRow:
    """A container's aggregate over the compared Variables under it (sums combined exactly)."""

    path: str
    count: int
    changed: int  # Variables under it that changed
    size: int
    rel_change: float
    max_abs: float
    cosine: float | None
    frac_changed: float
    identical: bool


def _layer_axes(side: Side, layers: Any) -> dict[str, int]:
    """Per a entry's key: its layer axis (layers= declarations win over flax's metadata)."""
    from ..snapshot import parse_layers

    spec = parse_layers(layers)
    axes: dict[str, int] = {}
    for e in side.entries:
        axis = metadata_axis(e)
        if axis is not None:
            axes[key_of(e.path)] = axis
    for prefix, axis in spec:
        hits = [e for e in side.entries if _under(e, prefix)]
        if not hits:
            raise ValueError(
                f"compare: layers={{{quote_repr(prefix)}: {axis}}}: no Variable under {quote_repr(prefix)} in a"
            )
        for e in hits:
            if axis is None or e.shape is None:
                axes.pop(key_of(e.path), None)
            elif not -len(e.shape) <= axis < len(e.shape):
                raise ValueError(
                    f"compare: layers={{{quote_repr(prefix)}: {axis}}}: {e.text} has shape {e.shape}, no axis {axis}"
                )
            else:
                axes[key_of(e.path)] = axis % len(e.shape)
    return axes


def _under(e: Entry, prefix: str | tuple) -> bool:
    if isinstance(prefix, tuple):
        return e.path[: len(prefix)] == prefix
    text = e.text
    return not prefix or text == prefix or text.startswith(prefix + ".") or text.startswith(prefix + "[")


def _source(side: Side, e: Entry) -> tuple[str, Any]:
    if e.kind == "checkpoint":
        from ..checkpoint import open_array

        return "checkpoint", open_array(side.checkpoint, e.value)
    return "array", e.value


def _skip_reason(m: Match) -> tuple[str, str] | None:
    for e in (m.a, m.b):
        if e.kind in ("error", "tracer", "abstract", "non_numeric", "deleted"):
            return e.kind, f"{'a' if e is m.a else 'b'}: {e.note}"
    return None


def compute(
    a: Any,
    b: Any,
    *,
    tol: float = 0.0,
    map: Any = None,
    layers: Any = None,
    chunk_bytes: int | None = None,
) -> tuple[list[CompareRow], list[ModuleRow], dict]:
    from ..checkpoint import CHUNK_BYTES

    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        raise TypeError(f"compare: tol= is a finite number >= 0, not {quote_repr(tol)}")
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else int(chunk_bytes)
    start = time.perf_counter()
    side_a, side_b = resolve_side("a", a), resolve_side("b", b)
    matches = match_sides(side_a, side_b, map)
    axes = _layer_axes(side_a, layers)
    device, streamed, results = [], [], {}
    for k, m in enumerate(matches):
        if m.status is not None:
            continue
        skip = _skip_reason(m)
        if skip is not None:
            m.status, m.note = skip
        elif m.a.kind == "checkpoint" or m.b.kind == "checkpoint":
            streamed.append(k)
        else:
            device.append(k)
    pairs = [(matches[k].a.value, matches[k].b.value, axes.get(key_of(matches[k].a.path))) for k in device]
    for k, parts in zip(device, device_partials(pairs, tol) if pairs else []):
        results[k] = parts
    for k in streamed:
        m = matches[k]
        try:
            stored = m.a if m.a.kind == "checkpoint" else m.b  # its shape: a PRNG key's is that of its key data
            itemsize = max(_itemsize(e.dtype) for e in (m.a, m.b) if e.kind != "prng_key")
            results[k] = [
                stream_partials(
                    _source(side_a, m.a),
                    _source(side_b, m.b),
                    stored.shape,
                    itemsize,
                    chunk_bytes,
                    tol,
                    stored.value.chunk_shape,
                )
            ]
        except Exception as e:  # noqa: BLE001 - boundary: a missing or corrupt checkpoint array is its row's status
            _log.info("nnx_lab: comparing %s from a checkpoint failed", m.a.text, exc_info=True)
            m.status, m.note = (
                "error",
                f"missing or corrupt data: {type(e).__name__}: {first_line(str(e), 200)}",
            )
    rows, totals = [], []
    for k, m in enumerate(matches):
        parts = results.get(k)
        axis = axes.get(key_of(m.a.path)) if m.a is not None and parts else None
        if axis is not None and k in streamed:  # a checkpoint's array is streamed whole: no layer rows
            axis, m.note = (
                None,
                "layer rows need both arrays on a device (a checkpoint's are streamed whole)",
            )
        rows.extend(_rows(m, parts, axis))
        if parts:
            whole = Partials.empty()
            for p in parts:
                whole.add(p)
            totals.append((m.a.path, whole))
    modules = _modules(totals)
    info = {
        "a_type": side_a.root_type,
        "b_type": side_b.root_type,
        "tol": float(tol),
        "elapsed_s": time.perf_counter() - start,
    }
    return _sorted(rows), modules, info


def _itemsize(dtype: str) -> int:
    import jax.numpy as jnp

    return jnp.dtype(dtype).itemsize


def _value_status(metrics: dict, prng: bool) -> tuple[str, str | None]:
    if metrics["nan_a"] or metrics["nan_b"]:
        return "nan", f"NaN: {metrics['nan_a']} in a, {metrics['nan_b']} in b"
    if prng:
        return "prng_key", None if metrics["identical"] else "the key data differ"
    if metrics["identical"]:
        return "identical", None
    return ("equal", None) if metrics["changed"] == 0 else ("changed", None)


def _rows(m: Match, parts: list[Partials] | None, axis: int | None) -> list[CompareRow]:
    a, b = m.a, m.b
    main = a or b
    path_b = b.text if a is not None and b is not None and b.text != a.text else None
    base = dict(
        path=main.text,
        path_b=path_b,
        mismatch="; ".join(m.mismatch) or None,
        type_a=a and a.type,
        type_b=b and b.type,
        shape_a=a and a.shape,
        shape_b=b and b.shape,
        dtype_a=a and a.dtype,
        dtype_b=b and b.dtype,
        size=main.size,
    )
    if not parts:
        return [CompareRow(status=m.status or "error", note=m.note, **base)]
    prng = a.kind == "prng_key" or b.kind == "prng_key"
    whole = Partials.empty()
    for p in parts:
        whole.add(p)
    out = [_valued(base, whole, prng, m.note)]
    if axis is not None:
        for i, p in enumerate(parts):
            shape = tuple(n for j, n in enumerate(a.shape) if j != axis)
            out.append(
                _valued(
                    dict(
                        base,
                        path=f"{main.text}[layer {i}]",
                        path_b=None,
                        size=p.size,
                        shape_a=shape,
                        shape_b=shape,
                    ),
                    p,
                    prng,
                    None,
                    layer=i,
                    layer_of=main.text,
                )
            )
    return out


def _valued(base: dict, p: Partials, prng: bool, note: str | None, **layer: Any) -> CompareRow:
    metrics = p.metrics()
    status, why = _value_status(metrics, prng)
    values = {} if prng else {k: metrics[k] for k in ("rel_change", "max_abs", "cosine", "frac_changed")}
    return CompareRow(status=status, identical=metrics["identical"], note=why or note, **values, **base, **layer)


def _modules(totals: list[tuple[Path, Partials]]) -> list[ModuleRow]:
    agg: dict[Path, tuple[Partials, list[int]]] = {}
    for path, p in totals:
        changed = 0 if p.ints[1] == 0 else 1
        for i in range(len(path)):
            prefix = path[:i]
            acc, counts = agg.setdefault(prefix, (Partials.empty(), [0, 0]))
            acc.add(p)
            counts[0] += 1
            counts[1] += changed
    out = []
    for prefix, (acc, (count, changed)) in agg.items():
        mt = acc.metrics()
        out.append(
            ModuleRow(
                path_text(prefix) or "(root)",
                count,
                changed,
                acc.size,
                mt["rel_change"],
                mt["max_abs"],
                mt["cosine"],
                mt["frac_changed"],
                mt["identical"],
            )
        )
    return sorted(out, key=lambda r: (-_order(r.rel_change), r.path))


def _order(x: float | None) -> float:
    if x is None or math.isnan(x):
        return -1.0
    return x


def _sorted(rows: list[CompareRow]) -> list[CompareRow]:
    """Structural problems first, then by relative change (largest first); layers after their Variable."""
    parents = [r for r in rows if r.layer is None]
    children: dict[str, list[CompareRow]] = {}
    for r in rows:
        if r.layer is not None:
            children.setdefault(r.layer_of, []).append(r)
    parents.sort(
        key=lambda r: (
            r.status not in _STRUCTURAL,
            r.status != "nan",
            -_order(r.rel_change),
            r.path,
        )
    )
    out = []
    for r in parents:
        out.append(r)
        out.extend(children.get(r.path, ()))
    return out
