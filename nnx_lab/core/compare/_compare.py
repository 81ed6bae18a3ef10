"""``compare(a, b)``: match the sides, compute the values where the arrays live, build the rows."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import jax

from .._gc import paused_gc
from ..checks import as_number
from ..text import first_line, quote_repr
from ._match import Match, key_of, match_sides
from ._rows import (
    CompareRow,
    ModuleRow,
    is_counter,
    is_floating,
    match_rows,
    module_rows,
    row_base,
    sorted_rows,
)
from ._sides import Entry, Side, resolve_side
from ._values import launch_partials, stream_partials

__all__ = ["compute"]

_log = logging.getLogger("nnx_lab")


def _layer_axes(side: Side, layers: object) -> dict[str, int]:
    """Per a entry's key: its layer axis (layers= declarations, snapshot's reading, win over flax's metadata)."""
    from ..snapshot import LayerError, declared_axes, metadata_axis, parse_layers

    axes = {key_of(e.path): metadata_axis(e.metadata, len(e.shape)) for e in side.entries if e.metadata and e.shape}
    try:
        declared = declared_axes(side.entries, parse_layers(layers), " in a")
    except LayerError as e:
        raise ValueError(f"compare: {e}") from None
    axes.update((key_of(side.entries[i].path), axis) for i, axis in declared.items())
    return {key: axis for key, axis in axes.items() if axis is not None}


def _source(side: Side, e: Entry) -> tuple[str, Any]:
    if e.kind == "checkpoint":
        from ..checkpoint import open_array

        return "checkpoint", open_array(side.checkpoint, e.value)
    return "array", e.value


def _deleted_since_read(e: Entry | None) -> bool:
    """Whether an entry's array was deleted after its side was read (a ``map=`` function that donated
    it, say): its row is ``deleted``, as for an array deleted before the call."""
    if e is None or e.kind not in ("array", "prng_key") or not isinstance(e.value, jax.Array):
        return False
    try:
        gone = e.value.is_deleted()
    except RuntimeError:  # jax could not tell (a failed computation): not readable either
        gone = True
    if gone:
        e.kind, e.value, e.note = "deleted", None, "the buffer was deleted or donated"
    return gone


def _counts(side_a: Side, side_b: Side, matches: dict[int, Match]) -> dict[int, tuple[int, int]]:
    """Per counter match (an integer scalar on both sides: an RNG counter, a step) its two values: the
    device ones in one fetch, a checkpoint's read from it. One that cannot be read has none."""
    from ..checkpoint import open_array

    device: list = []
    where: dict[int, list[tuple[bool, int]]] = {}  # per match: (on the device, index) or (False, value)
    for k, m in matches.items():
        a, b = m.pair  # a counter: is_counter holds for both sides
        try:
            pair = []
            for side, e in ((side_a, a), (side_b, b)):
                if e.kind == "checkpoint":
                    pair.append((False, int(open_array(side.checkpoint, e.value).read().result())))
                else:
                    pair.append((True, len(device)))
                    device.append(e.value)
            where[k] = pair
        except Exception:  # noqa: BLE001 - boundary: the row keeps its values, without the two counts
            _log.info("nnx_lab: the count %s could not be read", a.text, exc_info=True)
    try:
        fetched = [int(v) for v in jax.device_get(device)] if device else []
    except Exception:  # noqa: BLE001 - boundary: those rows keep their values, without the two counts
        _log.info("nnx_lab: the counts could not be read", exc_info=True)
        where = {k: p for k, p in where.items() if not (p[0][0] or p[1][0])}

    def value(on_device: bool, v: int) -> int:
        return fetched[v] if on_device else v

    return {k: (value(*p[0]), value(*p[1])) for k, p in where.items()}


def _skip_reason(m: Match) -> tuple[str, str] | None:
    a, b = m.pair  # asked of a match with no structural status: a pair
    for e in (a, b):
        if e.kind in ("error", "tracer", "abstract", "non_numeric", "deleted"):
            return e.kind, f"{'a' if e is a else 'b'}: {e.note}"
    return None


@paused_gc()  # the walks and rows make thousands of short-lived objects: no full collection meanwhile
def compute(
    a: Any,
    b: Any,
    *,
    tol: float = 0.0,
    map: Any = None,
    layers: Any = None,
    chunk_bytes: int | None = None,
) -> tuple[list[CompareRow], list[ModuleRow], dict]:
    from ..checkpoint import CHUNK_BYTES, whole_chunk_note

    number = as_number(tol)
    if number is None or not math.isfinite(number) or number < 0:
        raise TypeError(f"compare: tol= is a finite number >= 0, not {quote_repr(tol)}")
    tol = number  # a Python float: np.float32(0.1) or a 0-d array as well
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else int(chunk_bytes)
    start = time.perf_counter()
    side_a, side_b = resolve_side("a", a), resolve_side("b", b)
    matches = match_sides(side_a, side_b, map)
    axes = _layer_axes(side_a, layers)
    device, streamed, results = [], [], {}
    for k, m in enumerate(matches):
        if m.status is not None:
            continue
        _deleted_since_read(m.a)
        _deleted_since_read(m.b)
        skip = _skip_reason(m)
        if skip is not None:
            m.status, m.note = skip
        elif any(e.kind == "checkpoint" for e in m.pair):
            streamed.append(k)
        else:
            device.append(k)
    pairs = [(matches[k].a.value, matches[k].b.value, axes.get(key_of(matches[k].a.path))) for k in device]
    fetch = launch_partials(pairs, tol) if pairs else None  # dispatched: the device reduces while we go on
    bases = [row_base(m) for m in matches]
    for k in streamed:
        m = matches[k]
        try:
            stored = m.a if m.a.kind == "checkpoint" else m.b  # its shape: a PRNG key's is that of its key data
            itemsize = max(jax.numpy.dtype(e.dtype).itemsize for e in (m.a, m.b) if e.kind != "prng_key")
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
            whole = whole_chunk_note(stored.shape, itemsize, stored.value.chunk_shape, chunk_bytes)
            m.note = "; ".join(n for n in (m.note, whole) if n) or None  # a stored chunk read whole: said
        except Exception as e:  # noqa: BLE001 - boundary: a missing or corrupt checkpoint array is its row's status
            _log.info("nnx_lab: comparing %s from a checkpoint failed", m.a.text, exc_info=True)
            m.status, m.note = (
                "error",
                f"missing or corrupt data: {type(e).__name__}: {first_line(str(e), 200)}",
            )
    if fetch is not None:
        results.update(zip(device, fetch()))
    rows: list[CompareRow] = []
    totals = []
    counters = {k: m for k, m in enumerate(matches) if k in results and is_counter(m)}
    counts = _counts(side_a, side_b, counters) if counters else {}
    for k, m in enumerate(matches):
        parts = results.get(k)
        axis = axes.get(key_of(m.a.path)) if m.a is not None and parts else None
        if axis is not None and k in streamed:  # a checkpoint's array is streamed whole: no layer rows
            axis, m.note = (
                None,
                "layer rows need both arrays on a device (a checkpoint's are streamed whole)",
            )
        out, whole = match_rows(m, bases[k], parts, axis, counts.get(k))
        rows.extend(out)
        if whole is not None:
            totals.append((m.pair[0].path, whole, is_floating(m)))  # values: a pair
    modules: list[ModuleRow] = module_rows(totals)
    info = {
        "a_type": side_a.root_type,
        "b_type": side_b.root_type,
        "tol": float(tol),
        "elapsed_s": time.perf_counter() - start,
        "paths": {m.main.text: m.main.path for m in matches},
    }
    return sorted_rows(rows), modules, info
