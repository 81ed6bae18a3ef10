"""How a series tree's leaves are matched to a model's rows (see :mod:`._series`): each leaf's path
against the rows' paths (its longest suffix, with the same shape), the series it belongs to named
after the keys before that suffix, and what is wrong with a leaf that cannot be reduced.

>>> import jax.numpy as jnp
>>> leaf_paths({"a": {"kernel": jnp.ones(2)}, "b": [jnp.zeros(1)]})[0]
[('a', 'kernel'), ('b', 0)]
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from flax import nnx
from jax.core import Tracer

from ..compat import HIJAX_VARIABLE, get_value
from ..graph import Path, path_key, path_text
from ..text import quote

__all__ = [
    "STEP_COUNT",
    "Entry",
    "Layout",
    "is_step_count",
    "array_problem",
    "flat_leaves",
    "leaf_paths",
    "match",
    "series_names",
]


def leaf_paths(tree: Any) -> tuple[list[Path], list[Any]]:
    """Every leaf of ``tree`` (as ``jax.tree_util.tree_flatten`` orders them) and its path, a
    Variable's own ``value`` key dropped (``nnx.State``, optax states, dicts, lists, dataclasses)."""
    is_variable = _is_variable
    paths: list[Path] = []
    leaves: list[Any] = []
    for keys, item in jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_variable)[0]:
        base = tuple(path_key(k) for k in keys)
        if is_variable(item):
            for sub, leaf in jax.tree_util.tree_flatten_with_path(get_value(item))[0]:
                paths.append(base + tuple(path_key(k) for k in sub))
                leaves.append(leaf)
        else:
            paths.append(base)
            leaves.append(item)
    return paths, leaves


def flat_leaves(tree: Any) -> tuple[list[Any], object]:
    """``jax.tree_util.tree_flatten(tree)``, with each hijax Variable (a leaf to jax, not a pytree
    node) replaced by its value's leaves, in :func:`leaf_paths`' order."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    hijax = HIJAX_VARIABLE
    if hijax is not None and hijax in set(map(type, leaves)):  # one C-level pass; rarely true
        out: list[Any] = []
        for leaf in leaves:
            if type(leaf) is hijax:
                out.extend(jax.tree_util.tree_leaves(get_value(leaf)))
            else:
                out.append(leaf)
        leaves = out
    return leaves, treedef


_variable_types: dict[type, bool] = {}


def _is_variable(x: object) -> bool:
    """``isinstance(x, nnx.Variable)`` by type, cached: flax's metaclass check costs ~5 µs, asked of
    every node of a tree (100,000 gradient leaves: a second)."""
    t = type(x)
    got = _variable_types.get(t)
    if got is None:
        got = _variable_types[t] = isinstance(x, nnx.Variable)
    return got


#: an Entry's row for an optimizer's step counter (optax's ``count`` in a transform's state): the
#: optimizer's step, shown already; neither matched to a Variable nor listed as unmatched
STEP_COUNT = -2


def is_step_count(path: Path, leaf: Any) -> bool:
    """Whether an optimizer state's leaf is a transform's step counter: an integer scalar ``count``
    (``ScaleByAdamState.count``, ``ScaleByScheduleState.count``...)."""
    if not path or path[-1] != "count" or getattr(leaf, "shape", None) != ():
        return False
    try:
        return np.dtype(leaf.dtype).kind in "iu"
    except TypeError:
        return False


class Entry:
    """One array leaf of a series tree: where it goes (a row, :data:`STEP_COUNT`, or the unmatched list)."""

    __slots__ = ("series", "row", "text", "what")

    def __init__(self, series: str, row: int, text: str, what: str = ""):
        self.series, self.row, self.text, self.what = series, row, text, what


def array_problem(x: object) -> str | None:
    if isinstance(x, Tracer):
        return "a tracer (logged inside a jit/grad-transformed function?)"
    if isinstance(x, jax.Array):
        try:
            if x.is_deleted():
                return "deleted (donated to a jitted step?)"
        except RuntimeError:  # jax could not tell (a failed computation): a problem the status shows
            return "not readable"
        return None
    if isinstance(x, np.ndarray):
        return None
    return f"not an array ({type(x).__name__})"


def series_names(prefixes: list[Path], default: str) -> dict[Path, str]:
    """A name per prefix: its last named key, or the prefix's text where names collide."""

    def last_name(p: Path) -> str:
        for k in reversed(p):
            if isinstance(k, str):
                return k
        return path_text(p) or default

    names = {p: last_name(p) for p in prefixes}
    counts: dict[str, int] = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {p: (path_text(p) if counts[n] > 1 else n) for p, n in names.items()}


def match(paths: list[Path], leaves: list, index: dict, shapes: list, fixed: str | None, source: str) -> list[Entry]:
    """Each leaf's entry: matched to the row of its longest path suffix with the same shape (the
    series named ``fixed``, or after the keys before that suffix), else unmatched."""
    found: list[tuple[Path | None, int, str]] = []
    for path, leaf in zip(paths, leaves):
        row, prefix, what = -1, path, ""
        shape = getattr(leaf, "shape", None)
        for k in range(len(path)):
            i = index.get(path[k:])
            if i is not None:
                if shapes[i] == shape:
                    row, prefix = i, path[:k]
                else:
                    what = f"shape {shape} differs from {quote(path_text(path[k:]))}'s {shapes[i]}"
                break
        found.append((prefix if row >= 0 else None, row, what))
    names = series_names(sorted({p for p, _, _ in found if p is not None}, key=repr), "state")
    entries, taken = [], set()
    for path, leaf, (prefix, row, what) in zip(paths, leaves, found):
        name = fixed or (names[prefix] if prefix is not None else source)
        if row < 0 and not what and source == "optimizer state" and is_step_count(path, leaf):
            entries.append(Entry(source, STEP_COUNT, quote(path_text(path)), "the optimizer's step count"))
            continue
        if row >= 0 and prefix is not None and (name, row) in taken:  # (a row: its prefix is set)
            row, what = -1, f"a second {name} for {quote(path_text(path[len(prefix) :]))}"
        if row >= 0:
            taken.add((name, row))
        entries.append(Entry(name if row >= 0 else source, row, quote(path_text(path)) or "(root)", what))
    return entries


class Layout:
    """A series tree's entries for one structure of the model, reused while the tree's treedef is
    unchanged (flattening with paths costs far more than flattening)."""

    def __init__(self, tree: Any, index: dict, shapes: list, fixed: str | None, source: str):
        paths, leaves = leaf_paths(tree)
        self.entries = match(paths, leaves, index, shapes, fixed, source)
