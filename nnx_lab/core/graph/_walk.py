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
import functools
import logging
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from flax import nnx
from flax.nnx import graph as nnx_graph

from .. import compat
from ..fallbacks import slower
from ._flatten import CyclicGraph, SharedNode, TooDeep, flatten

# bound here by these names: the walk's jax callback looks them up in this module (tests patch them)
from ._kinds import GRAPH_NODE as _GRAPH_NODE
from ._kinds import VARIABLE as _VARIABLE
from ._kinds import child_of as _child
from ._kinds import is_variable  # noqa: F401 - tests name it here
from ._kinds import node_kind as _node_kind
from ._pair import split_pair
from ._paths import Path, path_key, path_text  # noqa: F401 - path_text: the doctest's
from ._shared import aliases_at, shared_prefixes

_log = logging.getLogger("nnx_lab")

#: Linen's own collection names: a variables dict with these at the top is Linen's (``model.init``)
LINEN_COLLECTIONS = frozenset(
    {"params", "batch_stats", "cache", "intermediates", "losses", "constants", "perturbations", "spectral", "stats"}
)
_SCALARS = (int, float, complex)


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One Variable (or bare array) found in the graph, before it is described."""

    path: Path
    type_name: str
    value: Any
    metadata: dict
    aliases: tuple[Path, ...]
    # An nnx.Param (or a Linen "params" entry): True; another Variable type (BatchStat, optimizer
    # state, RngState...): False; a bare array or number: None (nothing says what it is).
    param: bool | None = None


@dataclasses.dataclass(frozen=True)
class GraphWalk:
    leaves: list[Leaf]
    nodes: dict[Path, str]  # container path -> class name (Module, List, Dict, State, dict...)
    root_type: str
    # from jax's flattening (its order): the leaves are its Variables, each where jax reaches it
    flat: bool = False


def _is_array_leaf(value: object) -> bool:
    return isinstance(value, (jax.Array, np.ndarray, jax.ShapeDtypeStruct, np.generic))


def _leaf_type_name(value: object) -> str:
    if isinstance(value, jax.ShapeDtypeStruct):
        return "ShapeDtypeStruct"
    if isinstance(value, jax.Array):
        return "Array"
    return type(value).__name__


@functools.cache
def _default_metadata() -> dict:
    return nnx.Variable(0).get_metadata()


def _metadata_of(var: nnx.Variable) -> dict:
    """The Variable's metadata without the entries every Variable has by default."""
    default = _default_metadata()
    return {k: v for k, v in var.get_metadata().items() if not (k in default and _same(default[k], v))}


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception as e:  # noqa: BLE001 - boundary: a user metadata object's __eq__ may raise or be ambiguous
        _log.debug("nnx_lab: metadata %s == %s raised %s: kept", type(a).__name__, type(b).__name__, e)
        return False


def _variable_leaves(path: Path, var: nnx.Variable, aliases: tuple[Path, ...]) -> list[Leaf]:
    """A Variable as leaves: one, or one per array when it holds a tuple/list/dict of arrays
    (``sow`` keeps a tuple of every call's value: ``h[0]``, ``h[1]``)."""
    declared = compat.variable_type(var)  # a hijax Variable's own type, not HijaxVariable
    value, meta, name = compat.get_value(var), _metadata_of(var), declared.__name__
    param = _is_param(declared)
    if not isinstance(value, (tuple, list, dict)):
        return [Leaf(path, name, value, meta, aliases, param)]
    try:
        flat, _ = flatten(value, with_path=True)
    except CyclicGraph:  # a value that holds itself: one leaf, described as is
        return [Leaf(path, name, value, meta, aliases, param)]
    if not flat or not all(_is_array_leaf(v) or isinstance(v, _SCALARS) for _, v in flat):
        return [Leaf(path, name, value, meta, aliases, param)]
    out = []
    for keys, v in flat:
        suffix = tuple(path_key(k) for k in keys)
        out.append(Leaf(path + suffix, name, v, meta, tuple(a + suffix for a in aliases), param))
    return out


@functools.cache
def _is_param(t: type) -> bool:
    return issubclass(t, nnx.Param)


def _data_flags(value: object) -> Mapping | None:
    """Which attributes of a Module flax treats as data (``nnx.data``), where flax records it."""
    flags = getattr(value, "_pytree__nodes", None)
    return flags if isinstance(flags, Mapping) else None


def _linen_collection(obj: object, leaves: list[Leaf]) -> bool:
    """Whether ``obj`` is a Linen variables dict (``{"params": ..., "batch_stats": ...}`` of arrays)."""
    if not isinstance(obj, Mapping) or not obj or not all(isinstance(k, str) for k in obj):
        return False
    if any(leaf.type_name != "Array" and leaf.type_name != "ndarray" for leaf in leaves):
        return False
    return "params" in obj or set(obj) <= LINEN_COLLECTIONS


def walk_graph(obj: Any) -> GraphWalk:
    """Leaves and containers of ``obj``: a Module, a State, a nested dict, or a Variable."""
    if isinstance(obj, nnx.Variable):
        name = compat.variable_type(obj).__name__
        leaf = Leaf((), name, compat.get_value(obj), _metadata_of(obj), ())
        return GraphWalk([leaf], {}, name)
    if _is_array_leaf(obj):
        return GraphWalk([Leaf((), _leaf_type_name(obj), obj, {}, ())], {}, _leaf_type_name(obj))
    pair = split_pair(obj)
    if pair is not None:  # nnx.split's (graphdef, state, ...): the states' Variables, under the model's class
        walk = walk_graph(pair.state())
        return GraphWalk(walk.leaves, walk.nodes, pair.type_name)
    wrapped = compat.tolinen_module(obj)
    if wrapped is not None:  # NNX inside Linen: the wrapped module's Variables, abstract until init
        walk = walk_graph(wrapped)
        return GraphWalk(walk.leaves, walk.nodes, f"ToLinen({walk.root_type})")
    check_inspectable(obj)
    flat = _flat_walk(obj)
    if flat is not None:
        return flat
    visited: list[tuple[Path, object]] = list(compat.iter_graph(obj))
    seen = {path for path, _ in visited}
    shared = shared_prefixes(obj, seen)
    leaves: list[Leaf] = []
    nodes: dict[Path, str] = {}
    plain: set[Path] = set()  # containers that are not graph nodes: tuples, dicts, lists
    data = {path: flags for path, value in visited if (flags := _data_flags(value)) is not None}
    for path, value in visited:
        if isinstance(value, nnx.Variable):
            leaves.extend(_variable_leaves(path, value, aliases_at(path, shared)))
        elif (
            isinstance(value, _SCALARS)
            and not isinstance(value, bool)
            and path
            and data.get(path[:-1], {}).get(path[-1]) is True
        ):  # a number marked nnx.data
            leaves.append(Leaf(path, type(value).__name__, value, {}, aliases_at(path, shared)))
        elif _is_array_leaf(value):
            leaves.append(Leaf(path, _leaf_type_name(value), value, {}, aliases_at(path, shared)))
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
    if _linen_collection(obj, leaves):  # the collection is what a Linen user calls the type
        leaves = [
            dataclasses.replace(leaf, type_name=str(leaf.path[0]), param=leaf.path[0] == "params") for leaf in leaves
        ]
    return GraphWalk(leaves, nodes, root_type)


def _flat_walk(obj: Any) -> GraphWalk | None:
    """flax's walk, from jax's pytree flattening (C++: about 10x faster), where the two provably agree.

    They agree when every flattened leaf is a Variable reached once (no tied weights, no shared
    Module: those need flax's canonical paths and aliases), every graph node jax passes through holds
    a Variable (an empty Module is a node flax names; jax yields nothing for it) and every path,
    stepped through from ``obj``, reaches the very Variable jax found there. Otherwise None: flax walks.
    Containers come in flax's order (each after everything under it).
    """
    graph_nodes: list = []

    def is_leaf(x: object) -> bool:
        kind = _node_kind(x)
        if kind == _GRAPH_NODE:
            graph_nodes.append(x)
        return kind == _VARIABLE

    try:  # never jax's own flattening: a reference cycle would break this thread (see _flatten.py)
        flat, _ = flatten(obj, is_leaf, with_path=True, shared=False)  # shared: flax names its aliases
    except (SharedNode, TooDeep):  # a cycle, a shared node, a deep graph: flax walks it
        return None
    except Exception as e:  # noqa: BLE001 - boundary: a user's pytree flatten function raised; flax walks it
        slower("jax could not flatten %s: flax's walk instead", type(obj).__name__, error=e)
        return None
    objects: dict[Path, object] = {(): obj}
    nodes: dict[Path, str] = {}
    leaves: list[Leaf] = []
    reached: set[int] = set()
    open_: list[Path] = []  # containers whose subtree the leaves have not left yet, outermost first
    for keys, var in flat:
        if _node_kind(var) != _VARIABLE or id(var) in reached or not keys:
            return None
        reached.add(id(var))
        path = tuple(map(path_key, keys))
        parent = path[:-1]
        while open_ and path[: len(open_[-1])] != open_[-1]:
            done = open_.pop()
            nodes[done] = type(objects[done]).__name__
        if parent not in objects:  # the first leaf under some container: step down to it
            for i in range(1, len(path)):
                if path[:i] not in objects:
                    child = _child(objects[path[: i - 1]], path[i - 1])
                    if child is None:
                        return None
                    objects[path[:i]] = child
                    open_.append(path[:i])
        if path in objects or _child(objects[parent], path[-1]) is not var:
            return None
        leaves.extend(_variable_leaves(path, var, ()))
    while open_:
        done = open_.pop()
        nodes[done] = type(objects[done]).__name__
    found = {id(o) for o in objects.values()}
    if len(found) != len(objects) or any(id(n) not in found for n in graph_nodes):
        return None
    return GraphWalk(leaves, nodes, type(obj).__name__, flat=True)


def check_inspectable(obj: object) -> None:
    """Raise a one-line TypeError unless ``obj`` is something a snapshot can describe."""
    if isinstance(obj, nnx.Variable) or _is_array_leaf(obj):
        return
    if not (nnx_graph.is_graph_node(obj) or isinstance(obj, (Mapping, list, tuple))):
        raise TypeError(
            "expected an nnx.Module, an nnx.State, a nested dict of Variables or arrays, "
            f"or a Variable; got {type(obj).__name__}"
        )
