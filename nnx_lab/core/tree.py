"""Walk an NNX object with flax's own graph API: one leaf per Variable, one node per container.

``nnx.iter_graph`` visits every node once (a shared Variable or Module at its first
path), and ``nnx.find_duplicates`` names the other paths of each shared node; a
leaf under a shared node gets those paths, with its own suffix, as ``aliases``.

>>> from flax import nnx
>>> class Tied(nnx.Module):
...     def __init__(self, rngs):
...         self.embed = nnx.Embed(4, 2, rngs=rngs)
...         self.head = self.embed          # the same module twice
>>> walk = walk_graph(Tied(nnx.Rngs(0)))
>>> [(path_text(l.path), l.type_name, [path_text(a) for a in l.aliases]) for l in walk.leaves]
[('embed.embedding', 'Param', ['head.embedding'])]
>>> walk.nodes[("embed",)]
'Embed'
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Mapping
from typing import Any, Hashable

import jax
import numpy as np
from flax import nnx
from flax.nnx import graph as nnx_graph

from . import compat
Path = tuple[Hashable, ...]


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One Variable (or bare array) found in the graph, before it is described."""

    path: Path
    type_name: str
    value: Any
    metadata: dict
    aliases: tuple[Path, ...]


@dataclasses.dataclass(frozen=True)
class GraphWalk:
    leaves: list[Leaf]
    nodes: dict[Path, str]  # container path -> class name (Module, List, Dict, State, dict...)
    root_type: str


def _is_array_leaf(value: Any) -> bool:
    return isinstance(value, (jax.Array, np.ndarray, jax.ShapeDtypeStruct, np.generic))


def _leaf_type_name(value: Any) -> str:
    if isinstance(value, jax.ShapeDtypeStruct):
        return "ShapeDtypeStruct"
    if isinstance(value, jax.Array):
        return "Array"
    return type(value).__name__


_default_metadata: dict | None = None


def _metadata_of(var: nnx.Variable) -> dict:
    """The Variable's metadata without the entries every Variable has by default."""
    global _default_metadata
    if _default_metadata is None:
        _default_metadata = nnx.Variable(0).get_metadata()
    meta = var.get_metadata()
    return {k: v for k, v in meta.items() if not (k in _default_metadata and _default_metadata[k] == v)}


def walk_graph(obj: Any) -> GraphWalk:
    """Leaves and containers of ``obj``: a Module, a State, a nested dict, or a Variable."""
    if isinstance(obj, nnx.Variable):
        leaf = Leaf((), type(obj).__name__, compat.get_value(obj), _metadata_of(obj), ())
        return GraphWalk([leaf], {}, type(obj).__name__)
    if _is_array_leaf(obj):
        return GraphWalk([Leaf((), _leaf_type_name(obj), obj, {}, ())], {}, _leaf_type_name(obj))
    check_inspectable(obj)
    visited: list[tuple[Path, Any]] = list(compat.iter_graph(obj))
    seen = {path for path, _ in visited}
    shared = _shared_prefixes(obj, seen)
    leaves: list[Leaf] = []
    nodes: dict[Path, str] = {}
    plain: set[Path] = set()  # containers that are not graph nodes: tuples, dicts, lists
    for path, value in visited:
        if isinstance(value, nnx.Variable):
            leaves.append(Leaf(path, type(value).__name__, compat.get_value(value), _metadata_of(value),
                               _aliases(path, shared)))
        elif _is_array_leaf(value):
            leaves.append(Leaf(path, _leaf_type_name(value), value, {}, _aliases(path, shared)))
        elif nnx_graph.is_graph_node(value) or isinstance(value, (Mapping, list, tuple)):
            if path and isinstance(path[-1], str) and path[-1].startswith("_pytree__"):
                continue  # flax's own bookkeeping inside each Module
            nodes[path] = type(value).__name__
            if not nnx_graph.is_graph_node(value):
                plain.add(path)
    # A Module with no Variables is still part of the model; a static tuple attribute
    # (Dropout's broadcast_dims=()) is not: keep plain containers only with Variables under them.
    holding = {leaf.path[:i] for leaf in leaves for i in range(len(leaf.path))}
    nodes = {p: t for p, t in nodes.items() if p not in plain or p in holding}
    root_type = nodes.pop((), type(obj).__name__)
    return GraphWalk(leaves, nodes, root_type)


def check_inspectable(obj: Any) -> None:
    """Raise a one-line TypeError unless ``obj`` is something a snapshot can describe."""
    if isinstance(obj, nnx.Variable) or _is_array_leaf(obj):
        return
    if not (nnx_graph.is_graph_node(obj) or isinstance(obj, (Mapping, list, tuple))):
        raise TypeError(
            "expected an nnx.Module, an nnx.State, a nested dict of Variables or arrays, "
            f"or a Variable; got {type(obj).__name__}"
        )


def _shared_prefixes(obj: Any, seen: set[Path]) -> list[tuple[Path, list[Path]]]:
    """(the path iter_graph used, the other paths) for each node reachable more than once."""
    if not nnx_graph.is_graph_node(obj):
        return []
    groups = []
    for group in nnx.find_duplicates(obj):
        paths = [tuple(p) for p in group]
        canonical = next((p for p in paths if p in seen), paths[0])
        groups.append((canonical, [p for p in paths if p != canonical]))
    return groups


def _aliases(path: Path, shared: list[tuple[Path, list[Path]]]) -> tuple[Path, ...]:
    found: list[Path] = []
    for canonical, others in shared:
        if path[: len(canonical)] == canonical:
            suffix = path[len(canonical):]
            found.extend(other + suffix for other in others)
    return tuple(found)


def path_text(path: Path) -> str:
    """The path as Python attribute/index access, ready to paste after ``model``.

    >>> path_text(("blocks", 0, "attn", "query", "kernel"))
    'blocks[0].attn.query.kernel'
    >>> path_text(("d", "<script>", "class"))
    "d['<script>']['class']"
    """
    parts: list[str] = []
    for key in path:
        if isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key):
            parts.append(("." if parts else "") + key)
        else:
            parts.append(f"[{key!r}]")
    return "".join(parts)
