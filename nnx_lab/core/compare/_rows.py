"""A comparison's rows: one per Variable (and per layer of a stacked one) with its status and values,
per-module aggregates (sums combined exactly), and their order: structural problems first, then by
relative change."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

from ..graph import Path, path_text
from ._match import Match
from ._values import Partials

__all__ = [
    "STATUSES",
    "CompareRow",
    "ModuleRow",
    "is_counter",
    "is_floating",
    "is_key",
    "match_rows",
    "module_rows",
    "row_base",
    "sorted_rows",
]

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
    count_a: int | None = None  # an integer scalar (an RNG counter, a step): its value in a
    count_b: int | None = None  # ... and in b (shown as ``count 0 → 80``, not as a relative change)


@dataclasses.dataclass(frozen=True)
class ModuleRow:
    """A container's aggregate over the compared Variables under it (sums combined exactly).

    ``count``, ``changed`` and ``identical`` are over every compared Variable under it; the figures
    (``size``, ``rel_change``, ``max_abs``, ``cosine``, ``frac_changed``) over its floating-point
    Variables only (an RNG counter, a key's data or an integer array is no parameter to aggregate):
    None where it has none."""

    path: str
    count: int
    changed: int  # Variables under it that changed
    size: int  # elements of its floating-point Variables
    rel_change: float | None
    max_abs: float | None
    cosine: float | None
    frac_changed: float | None
    identical: bool


def _value_status(metrics: dict, prng: bool) -> tuple[str, str | None]:
    if metrics["nan_a"] or metrics["nan_b"]:
        return "nan", f"NaN: {metrics['nan_a']} in a, {metrics['nan_b']} in b"
    if prng:
        return "prng_key", None if metrics["identical"] else "the key data differ"
    if metrics["identical"]:
        return "identical", None
    return ("equal", None) if metrics["changed"] == 0 else ("changed", None)


def row_base(m: Match) -> dict:
    """What a match's rows say before its values are known (built while the device computes them)."""
    a, b = m.a, m.b
    main = m.main
    path_b = b.text if a is not None and b is not None and b.text != a.text else None
    return dict(
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


def match_rows(
    m: Match,
    base: dict,
    parts: list[Partials] | None,
    axis: int | None,
    counts: tuple[int, int] | None = None,
) -> tuple[list, Partials | None]:
    """The rows of a match (``base``: :func:`row_base`; ``parts``: its values, one per layer with
    ``axis``; ``counts``: an integer scalar's two values), and its values summed (None without values)."""
    a, b = m.a, m.b
    main = m.main
    if not parts:
        return [CompareRow(status=m.status or "error", note=m.note, **base)], None
    prng = is_key(a) or is_key(b)
    if counts is not None:  # a counter: its two values, not a relative change of a count
        metrics = parts[0].metrics()
        status, why = _value_status(metrics, False)
        row = CompareRow(
            status=status,
            identical=metrics["identical"],
            note=why or m.note or count_text(*counts),
            count_a=counts[0],
            count_b=counts[1],
            **base,
        )
        return [row], parts[0]
    if len(parts) == 1:
        whole = parts[0]  # read only from here on (module sums add it into their own)
    else:
        whole = Partials.empty()
        for p in parts:
            whole.add(p)
    out = [_valued(base, whole, prng, m.note)]
    if axis is not None:
        stacked = m.pair[0].shape  # an axis is a's, of a known shape (compare's _layer_axes)
        assert stacked is not None
        for i, p in enumerate(parts):
            shape = tuple(n for j, n in enumerate(stacked) if j != axis)
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
    return out, whole


def _valued(base: dict, p: Partials, prng: bool, note: str | None, **layer: Any) -> CompareRow:
    metrics = p.metrics()
    status, why = _value_status(metrics, prng)
    values = {} if prng else {k: metrics[k] for k in ("rel_change", "max_abs", "cosine", "frac_changed")}
    return CompareRow(status=status, identical=metrics["identical"], note=why or note, **values, **base, **layer)


def count_text(a: int, b: int) -> str:
    """A counter's two values: ``count 0 → 80``; ``count 80`` when they are equal."""
    return f"count {a}" if a == b else f"count {a} \u2192 {b}"


def is_key(e: Any) -> bool:
    """Whether an entry is a PRNG key: a key array, or a checkpoint's key data (Orbax records its impl)."""
    return e is not None and (e.kind == "prng_key" or getattr(e.value, "key_impl", None) is not None)


_FLOAT_KINDS = frozenset("fc")


@functools.cache
def _dtype_kind(dtype: str | None) -> str:
    """numpy's kind letter of a dtype text (``f`` for bfloat16 and float8 too); "" for a key or an unknown one."""
    import jax.numpy as jnp

    try:
        dt = jnp.dtype(dtype) if dtype is not None else None
    except TypeError:
        return ""
    return "" if dt is None else "f" if jnp.issubdtype(dt, jnp.floating) else dt.kind


def is_floating(m: Match) -> bool:
    """Whether a match's values are floating-point on every side (a parameter, a statistic): what
    module aggregates sum. An RNG counter, a key's data, an integer or bool array is not."""
    return not (is_key(m.a) or is_key(m.b)) and all(
        _dtype_kind(e.dtype) in _FLOAT_KINDS for e in (m.a, m.b) if e is not None
    )


def is_counter(m: Match) -> bool:
    """Whether a match is an integer scalar on both sides (an RNG counter, a step): shown as its two values."""
    return (
        m.a is not None
        and m.b is not None
        and not (is_key(m.a) or is_key(m.b))
        and all(e.shape == () and _dtype_kind(e.dtype) in "iu" for e in (m.a, m.b))
    )


def module_rows(totals: list[tuple[Path, Partials, bool]]) -> list[ModuleRow]:
    """Per container (every prefix of a path): ``totals`` are ``(path, values, floating)`` per
    compared Variable; the figures sum the floating ones only (see :class:`ModuleRow`)."""
    agg: dict[Path, tuple[Partials, list[int]]] = {}
    for path, p, floating in totals:
        changed = 0 if p.ints[1] == 0 else 1
        for i in range(len(path)):
            prefix = path[:i]
            acc, counts = agg.setdefault(prefix, (Partials.empty(), [0, 0, 0]))
            if floating:
                acc.add(p)
                counts[2] += 1
            counts[0] += 1
            counts[1] += changed
    out = []
    for prefix, (acc, (count, changed, floats)) in agg.items():
        mt = acc.metrics()
        has = floats > 0
        out.append(
            ModuleRow(
                path_text(prefix) or "(root)",
                count,
                changed,
                acc.size,
                mt["rel_change"] if has else None,
                mt["max_abs"] if has else None,
                mt["cosine"] if has else None,
                mt["frac_changed"] if has else None,
                changed == 0,
            )
        )
    return sorted(out, key=lambda r: (-_order(r.rel_change), r.path))


def _order(x: float | None) -> float:
    if x is None or math.isnan(x):
        return -1.0
    return x


def sorted_rows(rows: list[CompareRow]) -> list[CompareRow]:
    """Structural problems first, then by relative change (largest first); layers after their Variable."""
    parents = [r for r in rows if r.layer is None]
    children: dict[str | None, list[CompareRow]] = {}  # by layer_of (set on every layer's row)
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
