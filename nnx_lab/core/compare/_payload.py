"""A :class:`Comparison` as the comparison widget's payload: a tree of containers (with their
aggregates) and one row per Variable under its container, every number JSON-able (None for none).

Paths are split into their keys from the path text (``blocks[0].attn.kernel`` -> ``blocks``,
``[0]``, ``attn``, ``kernel``; a quoted key such as ``['a.b']`` stays one key), the containers are
every prefix of a row's path: those with compared values carry the Comparison's per-module
aggregates, the others (under a path only one side has) none.
"""

from __future__ import annotations

import math
from typing import Any

from ._rows import STATUSES

__all__ = ["comparison_payload", "split_path"]

_ROW_FIELDS = ("status", "mismatch", "type_a", "type_b", "dtype_a", "dtype_b", "size", "note", "layer", "path_b")
_NUMBERS = ("rel_change", "max_abs", "cosine", "frac_changed")


def split_path(text: str) -> list[str]:
    """The keys of a path text, each as written (``.name`` without its dot, ``[0]``, ``['a.b']``).

    >>> split_path("blocks[0].attn['a.b'].kernel")
    ['blocks', '[0]', 'attn', "['a.b']", 'kernel']
    """
    keys: list[str] = []
    cur = ""
    quote = None
    depth = 0
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if depth and ch in "'\"":
            quote = ch
            cur += ch
        elif ch == "[":
            if cur and depth == 0:
                keys.append(cur)
                cur = ""
            depth += 1
            cur += ch
        elif ch == "]":
            depth -= 1
            cur += ch
            if depth == 0:
                keys.append(cur)
                cur = ""
        elif ch == "." and depth == 0:
            if cur:
                keys.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        keys.append(cur)
    return keys


def _number(x: Any) -> float | None:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _join(keys: list[str]) -> str:
    return "".join(k if k.startswith("[") or i == 0 else "." + k for i, k in enumerate(keys))


def comparison_payload(cmp: Any) -> dict:
    """The widget's data: verdict and counts, ``modules`` (tree order: parent index, key, depth,
    aggregates) and ``rows`` (module index, key, status, the difference numbers...)."""
    aggregates = {m.path: m for m in cmp.modules}
    modules: list[dict] = []
    index: dict[str, int] = {}

    def module_of(keys: list[str]) -> int:
        parent = -1
        for depth in range(1, len(keys)):
            text = _join(keys[:depth])
            if text not in index:
                agg = aggregates.get(text)
                entry = {"path": text, "key": keys[depth - 1], "parent": parent, "depth": depth - 1}
                if agg is not None:
                    entry.update(
                        count=agg.count,
                        changed=agg.changed,
                        size=agg.size,
                        identical=agg.identical,
                        **{k: _number(getattr(agg, k)) for k in _NUMBERS},
                    )
                index[text] = len(modules)
                modules.append(entry)
            parent = index[text]
        return parent

    rows = []
    position: dict[str, int] = {}  # a stacked Variable's row, for its layers' rows
    for r in cmp.rows:
        if r.layer is not None:  # a layer of a stacked Variable: listed after that Variable's row, one deeper
            keys = [*split_path(r.layer_of or r.path), f"layer {r.layer}"]
        else:
            keys = split_path(r.path) or [r.path]
            position[r.path] = len(rows)
        row = {f: getattr(r, f) for f in _ROW_FIELDS}
        row.update(
            path=r.path,
            key=keys[-1],
            module=module_of(keys[:-1] if r.layer is not None else keys),
            layer_of=position.get(r.layer_of, -1) if r.layer is not None else -1,
            depth=len(keys) - 1,
            shape_a=list(r.shape_a) if r.shape_a is not None else None,
            shape_b=list(r.shape_b) if r.shape_b is not None else None,
            identical=r.identical,
            **{k: _number(getattr(r, k)) for k in _NUMBERS},
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
