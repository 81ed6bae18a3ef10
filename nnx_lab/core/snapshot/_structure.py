"""A model's structure, walked once and reused while it does not change: the one structure cache.

flax's graph walk (Python) costs about 10x jax's pytree flattening of the same module.
:class:`StructureCache` walks with flax once (``graph.walk_graph``), keeps the walk and the described
rows, and afterwards only flattens (``graph.flatten``: safe from cycles). The
same structure is: the treedef (every container's class, every attribute's name, every Variable's
type and metadata, in order) equal to the one remembered, the same positions reaching one node (a
tie made or undone), and every array's (type, shape, dtype, sharding) equal; the new arrays are
taken from the flattened leaves at the positions remembered. Anything else (a new or removed
Variable, a renamed attribute, new metadata, a changed shape, dtype or sharding, a tracer, a deleted
buffer) is a different structure: flax walks again. While jax enters the very containers of the
last flatten in the same order, it follows them without key paths (``graph.flatten_known``).

Users: a viewer keeps its own (``core.live``); one-off snapshots and ``compare`` share one per object,
:func:`remembered` (the last :data:`REMEMBERED` objects, by weak reference). None holds an array, a
Variable or a Module: ids, the treedef, the rows and the walk with its arrays left out.

A structure is reused only where jax's flattening provably gives the same answer as flax's walk (:func:`_build`).

>>> from flax import nnx
>>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
>>> cache = StructureCache()
>>> first = cache.describe(model); cache.hits
0
>>> again = cache.describe(model); cache.hits, again.rows is first.rows
(1, True)
>>> model.kernel = nnx.Param(model.kernel[...].T[:1])   # a new shape: a new structure
>>> cache.describe(model).rows[1].shape, cache.hits
((1, 2), 1)
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import weakref
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax.core import Tracer

from ..compat import get_value
from ..fallbacks import slower
from ..graph import GraphWalk, Leaf, Path, flatten, flatten_known, is_variable, path_key, split_pair, walk_graph
from ._describe import describe_leaf, devices_of

if TYPE_CHECKING:
    from ..graph import TreeDef
    from ..stats import LaunchPlan

#: Statuses a reused row may have: they follow from the treedef and the arrays' specs alone
#: (``deleted``, ``tracer`` and ``error`` rows are described afresh every time).
_STABLE = frozenset({"ok", "abstract", "prng_key", "non_numeric"})


@dataclasses.dataclass(eq=False)
class Structure:
    """What snapshots derive from a model's structure alone, worked out once per walk and shared by every
    refresh that reuses it (its identity says "the same structure"). Holds no array."""

    paths: tuple | None = None  # every row's path, in order
    layer_rows: np.ndarray | None = None  # per row: whether it is a layer of a stacked Variable
    totals: dict | None = None  # per Variable type (and "all"): count, size, bytes
    payload: dict | None = None  # the browser's nodes, rows and tables, without statistics (_payload)
    # by layers spec: None (no stacked Variable), or the rows with one per layer (_layers.Expansion)
    expansions: dict = dataclasses.field(default_factory=dict)
    # what other packages derive from the structure, under their own keys (core.training's series index)
    derived: dict = dataclasses.field(default_factory=dict)
    live_nbytes: int | None = None  # bytes of the live rows' arrays (their specs are the structure's)


@dataclasses.dataclass(frozen=True)
class Described:
    """A model's rows before their statistics, and the arrays to reduce for them."""

    rows: list  # Row, without statistics
    nodes: dict
    root_type: str
    devices: list | None
    live: list[int]  # indices of the rows whose statistics are computed
    arrays: list  # their arrays, in the same order
    reused: bool = False
    structure: Structure = dataclasses.field(default_factory=Structure)  # what snapshots derive from it alone
    layers: dict = dataclasses.field(default_factory=dict)  # live position of a first layer row -> (axis, layers)


def describe(obj: Any, *, stats: bool = True) -> Described:
    """Walk ``obj`` with flax and describe every Variable (no cache)."""
    return _without_stats(_described(walk_graph(obj)), stats)


def _without_stats(described: Described, stats: bool) -> Described:
    return described if stats else dataclasses.replace(described, live=[], arrays=[])


def _described(walk: GraphWalk) -> Described:
    rows = [describe_leaf(leaf) for leaf in walk.leaves]
    live = [i for i, row in enumerate(rows) if row.status == "ok"]
    return Described(
        rows, walk.nodes, walk.root_type, devices_of(walk.leaves), live, [walk.leaves[i].value for i in live]
    )


@dataclasses.dataclass
class _Structure:
    treedef: TreeDef
    positions: list[int]  # per array row: its position among the flattened leaves
    specs: list[tuple]  # per array row: (type, shape, dtype, sharding)
    visits: list[int]  # the containers jax entered, in order (graph.flatten's visits): ids, no objects
    leaves: list[Leaf]  # the walk's leaves, each array left out (its value None): see walk()
    array_rows: list[int]  # per array row: its index among the leaves (and rows)
    nodes: dict
    root_type: str
    # the rows, arrays emptied (None until a snapshot asks: compare reads the walk alone)
    described: Described | None = None
    live_k: list[int] = dataclasses.field(default_factory=list)  # per live row (status ok): its index into positions
    # launch plans, by the layout of the series' arrays
    plans: dict[tuple | None, LaunchPlan] = dataclasses.field(default_factory=dict)
    pattern: tuple[int, ...] | None = None  # which visits meet the same container (see _sharing)


class StructureCache:
    """One model's last structure (see the module docstring). Holds no array and no Variable."""

    def __init__(self):
        self._structure: _Structure | None = None
        self.hits = 0  # refreshes that reused the structure
        self.walks = 0  # refreshes that walked with flax

    def clear(self) -> None:
        self._structure = None

    def describe(self, obj: Any, *, stats: bool = True) -> Described:
        """``obj``'s rows and the arrays to reduce for them: the remembered ones while its structure is
        unchanged (``reused``), else walked with flax."""
        s, values, flat = self._reuse(obj)
        if s is None:
            described = _described(self._walk(obj, flat))
            s = self._structure
            if s is not None:
                self._keep(s, described)
            return _without_stats(described, stats)
        if s.described is None:  # walked for compare: its rows described once, now
            described = _described(_filled(s, values))
            if not self._keep(s, described):
                return _without_stats(described, stats)
        d = s.described
        assert d is not None
        return _without_stats(dataclasses.replace(d, arrays=[values[k] for k in s.live_k], reused=True), stats)

    def walk(self, obj: Any) -> GraphWalk:
        """``walk_graph(obj)``: the remembered walk with the arrays now at its positions while its
        structure is unchanged, else walked with flax (what ``compare`` reads of a model)."""
        s, values, flat = self._reuse(obj)
        return self._walk(obj, flat) if s is None else _filled(s, values)

    def _reuse(self, obj: Any) -> tuple[_Structure | None, list, _Flat | None]:
        """(the structure, the arrays at its positions, None) when ``obj`` has the remembered structure;
        else (None, [], what flattening ``obj`` gave: its leaves, treedef and visits, or None)."""
        s = self._structure
        # The same containers, in the same order, as last time: flattened without paths.
        fast = flatten_known(obj, s.visits) if s is not None else None
        visits: list[int] = []
        if fast is not None:
            leaves, treedef = fast
            visits = s.visits if s is not None else visits
        else:
            try:
                leaves, treedef = flatten(obj, visits=visits)  # not jax's own: a cycle would break this thread
            except Exception as e:  # noqa: BLE001 - boundary: a user's pytree nodes may raise anything; flax walks it
                slower("%s not flattened: flax walks it at every refresh", type(obj).__name__, error=e)
                return None, [], None
        flat = _Flat(leaves, treedef, visits)
        if s is None or not _same_treedef(obj, treedef, s.treedef):
            return None, [], flat
        # New containers (a replaced or swapped Module): the same structure only if the same positions
        # share a node (a tie made or undone shows in nothing else: not in the treedef, not in the specs).
        if fast is None:
            if s.pattern is None:
                s.pattern = _sharing(s.visits)
            if _sharing(visits) != s.pattern:
                return None, [], flat
        values = [leaves[p] for p in s.positions]
        specs = [(type(v), v.shape, v.dtype, getattr(v, "sharding", None)) for v in values]
        if specs != s.specs or not _none_deleted(values):
            return None, [], flat
        self.hits += 1
        if fast is None:  # in new containers: what the next refresh follows
            s.visits, s.pattern = visits, None
        return s, values, None

    def _walk(self, obj: Any, flat: _Flat | None) -> GraphWalk:
        self.walks += 1
        walk = walk_graph(obj)
        self._structure = _build(obj, walk, flat)
        return walk

    def _keep(self, s: _Structure, described: Described) -> bool:
        """Keep ``described``'s rows with the structure, or forget the structure where a row's status
        would not follow from it alone; whether kept."""
        k_of_row = {i: k for k, i in enumerate(s.array_rows)}
        if any(row.status not in _STABLE for row in described.rows) or any(i not in k_of_row for i in described.live):
            self._structure = None
            return False
        s.described = dataclasses.replace(described, arrays=[])
        s.live_k = [k_of_row[i] for i in described.live]
        return True

    @property
    def plan(self) -> LaunchPlan | None:
        """What the statistics computed once for this structure (their launch plan), or None."""
        return self.plan_for(None)

    def plan_for(self, extra: tuple | None) -> LaunchPlan | None:
        """The launch plan for this structure's arrays followed by arrays laid out as ``extra``
        (a hashable spec of a refresh's series, None without any), or None."""
        return None if self._structure is None else self._structure.plans.get(extra)

    def set_plan(self, extra: tuple | None, plan: LaunchPlan) -> None:
        if self._structure is not None:
            if len(self._structure.plans) >= 4 and extra not in self._structure.plans:
                self._structure.plans.pop(next(iter(self._structure.plans)))
            self._structure.plans[extra] = plan


@dataclasses.dataclass(frozen=True)
class _Flat:
    """What flattening a model gave: its leaves, treedef, and the containers entered (graph.flatten)."""

    leaves: list
    treedef: TreeDef
    visits: list[int]


def _same_treedef(obj: object, treedef: TreeDef, known: TreeDef) -> bool:
    try:
        return bool(treedef == known)
    except Exception as e:  # noqa: BLE001 - boundary: a static attribute's __eq__ (a user's, a numpy array's)
        slower("comparing %s's treedefs raised: walked afresh", type(obj).__name__, error=e)
        return False


def _sharing(visits: list[int]) -> tuple[int, ...]:
    """Per visit, its container's number (numbered by first visit): equal for two walks exactly when
    the same positions reach one node (tied Modules and Variables), whatever the nodes' ids."""
    first: dict[int, int] = {}
    return tuple(first.setdefault(i, len(first)) for i in visits)


def _none_deleted(values: list) -> bool:
    """No array deleted or donated since (a row's status says ``deleted``: it is described afresh)."""
    return not any(isinstance(v, jax.Array) and v.is_deleted() for v in values)


def _flat_paths(obj: Any) -> list[Path] | None:
    """The path of each leaf of ``jax.tree_util.tree_flatten(obj)``, as flax's walk names it (a
    Variable's own ``value`` key dropped), or None when the two cannot be matched."""
    skip = 1 if split_pair(obj) is not None else 0  # a (graphdef, state, ...) pair: paths within its states
    paths: list[Path] = []
    for keys, item in flatten(obj, is_variable, with_path=True)[0]:
        base = tuple(map(path_key, keys[skip:]))
        if is_variable(item) and isinstance(get_value(item), jax.Array):
            paths.append(base)  # one leaf, the array (checked by _build: the very object at that position)
        elif is_variable(item):
            for sub, _ in flatten(item, with_path=True)[0]:
                if not sub or path_key(sub[0]) != "value":
                    return None
                paths.append(base + tuple(path_key(k) for k in sub[1:]))
        else:
            paths.append(base)
    return paths


_ARRAYS = (jax.Array, jax.ShapeDtypeStruct, np.ndarray)


def _build(obj: Any, walk: GraphWalk, flat: _Flat | None) -> _Structure | None:
    """The structure to reuse, or None where jax's flattening and flax's walk do not agree."""
    if flat is None:
        return None
    leaves = flat.leaves
    if not all(isinstance(v, (jax.Array, jax.ShapeDtypeStruct)) and not isinstance(v, Tracer) for v in leaves):
        return None
    if not _none_deleted(leaves):
        return None
    array_rows = [i for i, leaf in enumerate(walk.leaves) if isinstance(leaf.value, _ARRAYS)]
    if (
        walk.flat
        and len(array_rows) == len(walk.leaves) == len(leaves)
        and all(v is leaf.value for v, leaf in zip(leaves, walk.leaves))
    ):
        # jax's walk, one array per Variable: the k-th leaf of both flattens is the k-th Variable's
        positions: list[int] | None = list(range(len(leaves)))
    else:
        positions = _positions(obj, walk.leaves, leaves)
    if positions is None:
        return None
    specs = [(type(v), v.shape, v.dtype, getattr(v, "sharding", None)) for v in (leaves[p] for p in positions)]
    bare = list(walk.leaves)
    for i in array_rows:
        leaf = bare[i]
        bare[i] = Leaf(leaf.path, leaf.type_name, None, leaf.metadata, leaf.aliases, leaf.param)
    return _Structure(flat.treedef, positions, specs, flat.visits, bare, array_rows, dict(walk.nodes), walk.root_type)


def _positions(obj: Any, walk_leaves: list[Leaf], leaves: list) -> list[int] | None:
    """Per array leaf of the walk, its position among the flattened ``leaves``, matched by path (None
    where a flattened leaf is not at a path the walk names, or an array not at its own path)."""
    try:
        paths = _flat_paths(obj)
    except Exception as e:  # noqa: BLE001 - boundary: a user's pytree nodes may raise anything; walked every time
        slower(
            "%s: flattened paths not matched to the walk's: flax walks it at every refresh", type(obj).__name__, error=e
        )
        return None
    if paths is None or len(paths) != len(leaves):
        return None
    where: dict[Path, int] = {}
    for p, path in enumerate(paths):
        where.setdefault(path, p)
    named: set[Path] = set()
    positions: list[int] = []
    for leaf in walk_leaves:
        named.update((leaf.path, *leaf.aliases))
        if isinstance(leaf.value, _ARRAYS):
            p = where.get(leaf.path)
            if p is None or leaves[p] is not leaf.value:
                return None
            positions.append(p)
        elif leaf.path in where:
            return None
    if not set(paths) <= named or len(positions) != len(set(positions)):
        return None
    return positions


def _filled(s: _Structure, values: list) -> GraphWalk:
    """The remembered walk with ``values`` (the arrays now at its positions) in its leaves."""
    leaves = list(s.leaves)
    for k, i in enumerate(s.array_rows):
        leaf = leaves[i]
        leaves[i] = Leaf(leaf.path, leaf.type_name, values[k], leaf.metadata, leaf.aliases, leaf.param)
    return GraphWalk(leaves, dict(s.nodes), s.root_type)


#: How many objects' structures one-off snapshots and ``compare`` remember (by weak reference).
REMEMBERED = 8
_remembered: collections.OrderedDict[tuple[int, str], tuple[weakref.ref, StructureCache]] = collections.OrderedDict()
_remembered_lock = threading.Lock()


def remembered(obj: Any, layers: object = None) -> StructureCache | None:
    """The StructureCache of ``obj`` (with these ``layers``) shared by one-off snapshots and ``compare``:
    a second look at an unchanged model costs a flatten, not a walk. None for an object that cannot be
    held by weak reference (a dict: walked every time)."""
    try:
        ref = weakref.ref(obj)
    except TypeError:
        return None
    with _remembered_lock:
        for key in [k for k, (r, _) in _remembered.items() if r() is None]:
            del _remembered[key]
        key = (id(obj), repr(layers))
        entry = _remembered.get(key)
        if entry is not None and entry[0]() is obj:
            _remembered.move_to_end(key)
            return entry[1]
        cache = StructureCache()
        _remembered[key] = (ref, cache)
        while len(_remembered) > REMEMBERED:
            _remembered.popitem(last=False)
        return cache
