"""A :class:`Comparison` as the comparison widget's payload: a tree of containers (with their
aggregates) and one row per Variable under its container, every number JSON-able (None for none).

The containers are every prefix of a row's path (its keys as written: ``blocks``, ``[0]``, ``['a.b']``):
those with compared values carry the Comparison's per-module aggregates, the others (under a path
only one side has) none.
"""

from __future__ import annotations

import math
from typing import Any

from ..graph import Path, path_text
from ..render import format_number
from ._rows import STATUSES

__all__ = ["comparison_payload"]

_ROW_FIELDS = ("status", "mismatch", "type_a", "type_b", "dtype_a", "dtype_b", "size", "note", "layer", "path_b")
_NUMBERS = ("rel_change", "max_abs", "cosine", "frac_changed")


def _number(x: Any) -> float | None:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _rel_text(rel: Any) -> dict:
    """A relative change JSON cannot carry (inf: ``a`` all zeros, as a zero-initialised bias) as the
    text table writes it, with what it means; None for both where the number says itself."""
    if _number(rel) is not None or not isinstance(rel, float):
        return {"rel_change_text": None, "rel_change_title": None}
    text = format_number(rel)
    why = ": a is all zeros here" if rel == math.inf else ""
    return {"rel_change_text": text, "rel_change_title": f"\u2016a\u2212b\u2016/\u2016a\u2016 = {text}{why}"}


def comparison_payload(cmp: Any) -> dict:
    """The widget's data: verdict and counts, ``modules`` (tree order: parent index, key, depth,
    aggregates) and ``rows`` (module index, key, status, the difference numbers...)."""
    aggregates = {m.path: m for m in cmp.modules}
    modules: list[dict] = []
    index: dict[str, int] = {}

    def module_of(path: Path) -> int:
        parent = -1
        for depth in range(1, len(path)):
            text = path_text(path[:depth])
            if text not in index:
                agg = aggregates.get(text)
                entry = {"path": text, "key": path_text(path[depth - 1 : depth]), "parent": parent, "depth": depth - 1}
                if agg is not None:
                    entry.update(
                        count=agg.count,
                        changed=agg.changed,
                        size=agg.size,
                        identical=agg.identical,
                        **{k: _number(getattr(agg, k)) for k in _NUMBERS},
                        **_rel_text(agg.rel_change),
                    )
                index[text] = len(modules)
                modules.append(entry)
            parent = index[text]
        return parent

    rows = []
    position: dict[str, int] = {}  # a stacked Variable's row, for its layers' rows
    for r in cmp.rows:
        path = cmp.paths[r.layer_of or r.path]
        if r.layer is None:
            position[r.path] = len(rows)
        row = {f: getattr(r, f) for f in _ROW_FIELDS}
        row.update(
            path=r.path,
            key=f"layer {r.layer}" if r.layer is not None else path_text(path[-1:]),
            module=module_of(path),  # a layer's: its Variable's (the layer is one deeper)
            layer_of=position.get(r.layer_of, -1) if r.layer is not None else -1,
            depth=len(path) - (r.layer is None),
            shape_a=list(r.shape_a) if r.shape_a is not None else None,
            shape_b=list(r.shape_b) if r.shape_b is not None else None,
            identical=r.identical,
            **{k: _number(getattr(r, k)) for k in _NUMBERS},
            **_rel_text(r.rel_change),
        )
        rows.append(row)
    return {
        "verdict": cmp.verdict,
        "a_type": cmp.a_type,
        "b_type": cmp.b_type,
        "tol": cmp.tol,
        "loadable": cmp.loadable,
        "identical": cmp.identical,
        "counts": cmp.counts,
        "statuses": dict(STATUSES),
        "modules": modules,
        "rows": rows,
    }
