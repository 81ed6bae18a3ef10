"""Models with reference cycles (legal in NNX: flax's walk visits each node once), and errors in
the middle of a walk: every feature handles the first as flax's graph functions do, and neither
leaves this thread or flax changed.

What used to break: jax's C++ pytree flattening recursed around a cycle until RecursionError, and
jaxlib does not undo its ``Py_EnterRecursiveCall`` per level when an exception passes through, so
the thread's recursion headroom was gone for good (every later ``class N(nnx.Module)`` raised
RecursionError). Any exception raised in a callback jax calls mid-walk (a Ctrl-C) leaks the same
way, by the depth reached. ``headroom()`` measures that counter; every test checks it is intact.

Reaches inside ``nnx_lab.core.graph._walk`` and ``nnx_lab.core.snapshot._structure`` (why this file
may): the errors are raised where they hurt, inside the leaf predicate jax calls from C++ and
between the walk and the rows, which no public API reaches.
"""

import signal
import sys
import threading

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from flax.nnx import graph as nnx_graph

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.graph import (
    CyclicGraph,
    SharedNode,
    TooDeep,
    _walk,
    flatten,
    flatten_known,
    is_variable,
    path_text,
    walk_graph,
)
from nnx_lab.core.snapshot import StructureCache, _structure, snapshot

_data = getattr(nnx, "data", lambda value: value)  # flax 0.12 wants containers of modules marked as data


class M(nnx.Module):
    def __init__(self, seed=0):
        self.l = nnx.Linear(2, 2, rngs=nnx.Rngs(seed))

    def __call__(self, x):
        y = self.l(x)
        self.sow(nnx.Intermediate, "y", y)
        return y


def _linked(model, *links):
    """``model`` with each (owner, attribute, value) of ``links`` set: the back references."""
    for owner, name, value in links:
        setattr(owner, name, value)
    return model


def _self():
    m = M()
    return _linked(m, (m, "me", m))


def _child_holds_parent():
    m = M()
    return _linked(m, (m.l, "parent", m))


def _mutual():
    a, b = M(0), M(1)
    return _linked(a, (a, "other", b), (b, "other", a))


def _shared_points_back():
    m, s = M(0), M(1)
    return _linked(m, (m, "s1", s), (m, "s2", s), (s, "back", m))


def _through_dict():
    m = M(0)
    m.d = _data({"x": M(1)})
    return _linked(m, (m.d["x"], "up", m))


def _through_list():
    m = M(0)
    m.items = _data([M(1)])
    return _linked(m, (m.items[0], "up", m))


def _through_nnx_list():
    if compat.missing("nnx.List"):
        pytest.skip(compat.missing("nnx.List"))
    m = M(0)
    m.items = nnx.List([M(1)])
    m.items[0].up = m
    return m


CYCLIC = {
    "self": _self,
    "child-holds-parent": _child_holds_parent,
    "mutual": _mutual,
    "shared-points-back": _shared_points_back,
    "dict": _through_dict,
    "list": _through_list,
    "nnx.List": _through_nnx_list,
}

# The rows each one has: every Variable once, at flax's first path; the cycle as the alias flax's
# find_duplicates names (the model itself reached again through the back reference).
EXPECTED = {
    "self": {"l.bias": ["me.l.bias"], "l.kernel": ["me.l.kernel"]},
    "child-holds-parent": {"l.bias": ["l.parent.l.bias"], "l.kernel": ["l.parent.l.kernel"]},
    "mutual": {
        "l.bias": ["other.other.l.bias"],
        "l.kernel": ["other.other.l.kernel"],
        "other.l.bias": ["other.other.other.l.bias"],
        "other.l.kernel": ["other.other.other.l.kernel"],
    },
    "shared-points-back": {
        "l.bias": ["s1.back.l.bias"],
        "l.kernel": ["s1.back.l.kernel"],
        "s1.l.bias": ["s1.back.s1.l.bias", "s2.l.bias"],
        "s1.l.kernel": ["s1.back.s1.l.kernel", "s2.l.kernel"],
    },
}


def headroom() -> int:
    """How many Python frames this thread may have in all: the frames on its stack now plus those it
    may still push (the same wherever it is called; what a leaked recursion counter takes away)."""
    n, frame = 0, sys._getframe()
    while frame is not None:
        n, frame = n + 1, frame.f_back

    def down():
        nonlocal n
        n += 1
        down()

    try:
        down()
    except RecursionError:
        pass
    return n


def _flax_stacks() -> dict:
    """flax's graph context (thread-local stacks and caches) as counts and values."""
    ctx = getattr(nnx_graph, "GRAPH_CONTEXT", None)
    if ctx is None:
        return {}
    return {k: (len(v) if isinstance(v, (list, dict)) else v) for k, v in vars(ctx).items()}


class Health:
    """The thread's recursion headroom and flax's context at :func:`healthy`; ``check()``: both
    unchanged, and a new Module class, nnx.split and nnx.merge work (what a leaked counter breaks)."""

    def measure(self) -> tuple:
        headroom()  # once before: the interpreter's first calls of a function are counted differently
        return headroom(), _flax_stacks()

    def check(self):
        now = self.measure()  # called as healthy() calls it: the same frames, Python and C, below
        assert now[0] == self.before[0], "the thread's recursion headroom shrank"
        assert now[1] == self.before[1]

        class N(nnx.Module):
            def __init__(self):
                self.l = nnx.Linear(2, 3, rngs=nnx.Rngs(0))

        graphdef, state = nnx.split(N())
        assert nnx.merge(graphdef, state).l.kernel.shape == (2, 3)


def healthy() -> Health:
    health = Health()
    health.before = health.measure()
    return health


def _rows(snap) -> dict:
    return {r.path_text: [path_text(a) for a in r.aliases] for r in snap.rows}


def _flax_paths(model) -> list[str]:
    return sorted(path_text(tuple(p)) for p, _ in nnx.to_flat_state(nnx.state(model)))


@pytest.mark.parametrize("name", list(CYCLIC))
def test_flatten_refuses_a_cycle_and_leaves_the_thread_intact(name):
    health = healthy()
    model = CYCLIC[name]()
    with pytest.raises(CyclicGraph, match="references itself"):
        flatten(model)
    with pytest.raises(CyclicGraph):
        flatten(model, is_variable, with_path=True)
    with pytest.raises(SharedNode):  # what a caller that refuses any shared node gets, at once
        flatten(model, shared=False)
    health.check()


def test_flatten_is_jax_for_shared_and_plain_graphs():
    health = healthy()

    class Tied(nnx.Module):
        def __init__(self):
            self.embed = nnx.Embed(5, 3, rngs=nnx.Rngs(0))
            self.head = self.embed
            self.pair = _data([self.embed, (self.embed, {"e": self.embed})])

    for tree in (Tied(), M(), {"a": [1, (2.0, None)], "b": jnp.ones(3)}, nnx.state(Tied()), ()):
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        got, got_def = flatten(tree)
        assert got_def == treedef and len(got) == len(leaves) and all(a is b for a, b in zip(got, leaves))
        with_path, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_variable)
        got = flatten(tree, is_variable, with_path=True)[0]
        assert [k for k, _ in got] == [k for k, _ in with_path]
        assert all(a is b for (_, a), (_, b) in zip(got, with_path))
    health.check()


@pytest.mark.parametrize("name", list(CYCLIC))
def test_snapshot_walks_a_cycle_once_and_names_it_as_an_alias(name):
    health = healthy()
    model = CYCLIC[name]()
    snap = snapshot(model)
    rows = _rows(snap)
    assert sorted(rows) == _flax_paths(model)  # each Variable once, where flax's state has it
    if name in EXPECTED:
        assert rows == EXPECTED[name]
    assert all(rows.values())  # every Variable is reachable again through the cycle
    assert all(r.stats for r in snap.rows)
    assert "=" in str(snap)  # the text table shows the aliases
    assert snapshot(model, stats=False).rows  # again: nothing left behind by the first
    health.check()


@pytest.mark.parametrize("name", ["self", "shared-points-back", "nnx.List"])
def test_a_viewer_refreshes_a_cyclic_model(name):
    health = healthy()
    model = CYCLIC[name]()
    viewer = nnx_lab.watch(model, display=False)
    try:
        model.l.kernel.value = model.l.kernel.value + 1  # a training step
        viewer.refresh()
        viewer.refresh()
        snap = viewer.last_snapshot
        assert sorted(_rows(snap)) == _flax_paths(model)
        assert snap["l.kernel"].stats["mean"] == pytest.approx(float(model.l.kernel.value.mean()), rel=1e-6)
    finally:
        viewer.close()
    health.check()


def test_structure_cache_walks_a_cyclic_model_with_flax_and_sees_a_cycle_come_and_go():
    health = healthy()
    model, cache = M(), StructureCache()
    cache.describe(model)
    cache.describe(model)
    assert (cache.walks, cache.hits) == (1, 1)
    model.me = model  # a cycle appears between refreshes: jax's flattening must not meet it
    described = cache.describe(model)
    assert [r.path_text for r in described.rows] == ["l.bias", "l.kernel"]
    assert [[path_text(a) for a in r.aliases] for r in described.rows] == [["me.l.bias"], ["me.l.kernel"]]
    cache.describe(model)
    assert (cache.walks, cache.hits) == (3, 1)  # a cyclic model is walked by flax at every refresh
    del model.me
    cache.describe(model)
    cache.describe(model)
    assert (cache.walks, cache.hits) == (4, 2)  # and reused again once the cycle is gone
    health.check()


@pytest.mark.parametrize("name", list(CYCLIC))
def test_split_report_of_a_cyclic_model(name):
    health = healthy()
    model = CYCLIC[name]()
    report = nnx_lab.split_report(model, nnx.Param, ...)
    _, params, rest = nnx.split(model, nnx.Param, ...)
    assert report.filters[0].count == len(list(nnx.to_flat_state(params)))
    assert report.filters[1].count == len(list(nnx.to_flat_state(rest)))
    assert sorted(r.row.path_text for r in report.rows) == _flax_paths(model)
    assert all(r.row.aliases for r in report.rows) and "=" in report.to_html()
    health.check()


def test_split_magic_on_a_cyclic_model(ip):
    health = healthy()
    ip.user_ns.update(nnx=nnx, jax=jax, model=_self())
    ip.run_cell_magic("nnx_split", "model nnx.Param ...", "param = jax.tree.map(lambda p: p * 0 + 3, param)")
    model = ip.user_ns["model"]
    assert model.me is model and float(model.l.kernel.value.sum()) == 12.0
    for name in ("model", "graphdef", "param", "rest"):
        ip.user_ns.pop(name, None)
    health.check()


@pytest.mark.parametrize(
    "name, back",
    [("self", "me"), ("child-holds-parent", "l.parent"), ("mutual", "other.other"), ("shared-points-back", "s1.back")],
)
def test_view_report_lists_each_module_once_and_names_the_cycle(name, back):
    health = healthy()
    model = CYCLIC[name]()
    model.drop = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
    report = nnx_lab.view_report(model)
    assert [m.path_text for m in report.modules] == ["drop"] and report.mode == "train"
    assert [path_text(a) for a in report.modules[0].aliases] == [f"{back}.drop"]
    assert f"    the same module as {back}.drop" in report.to_text().splitlines()
    health.check()


@pytest.mark.parametrize("name", ["self", "mutual", "shared-points-back"])
def test_capture_of_a_cyclic_model(name):
    health = healthy()
    if compat.missing("nnx.capture"):
        pytest.skip(compat.missing("nnx.capture"))
    model = CYCLIC[name]()
    _, captured = nnx_lab.capture_call(model, model, jnp.ones((1, 2)), methods=True)
    paths = sorted(path_text(tuple(p)) for p, _ in nnx.to_flat_state(captured))
    assert paths == ["__call__", "l.__call__", "y"]  # the root's calls, once, though it is reachable twice
    report = nnx_lab.capture_report(captured)
    assert "y" in str(report)
    assert "__captures__" not in vars(model) and "__captures__" not in vars(model.l)  # disarmed
    health.check()


# --------------------------------------------------------------------------- errors in the middle of a walk


def _raise_on_call(k: int, exc: type, original):
    calls = [0]

    def patched(*args, **kwargs):
        calls[0] += 1
        if calls[0] == k:
            raise exc("injected")
        return original(*args, **kwargs)

    return patched


def _iter_graph_raising(k: int, exc: type, original):
    def patched(node, *args, **kwargs):
        for i, item in enumerate(original(node, *args, **kwargs)):
            if i == k:
                raise exc("injected")
            yield item

    return patched


# Where: inside the leaf predicate jax calls from C++ (the flat walk, the structure cache's paths),
# inside flax's graph walk, between the walk and the rows, in flax's duplicate search.
POINTS = {
    "jax flatten callback, 1st node": (_walk, "_node_kind", _raise_on_call, 1),
    "jax flatten callback, deep": (_walk, "_node_kind", _raise_on_call, 12),
    "flax iter_graph": (nnx, "iter_graph", _iter_graph_raising, 5),
    "flax find_duplicates": (nnx, "find_duplicates", _raise_on_call, 1),
    "describing a row": (_structure, "describe_leaf", _raise_on_call, 2),
}


class Plain(nnx.Module):
    def __init__(self):
        self.blocks = _data([M(i) for i in range(3)])


@pytest.mark.parametrize("exc", [KeyboardInterrupt, RecursionError])
@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("make", [Plain, _self], ids=["acyclic", "cyclic"])
def test_an_error_mid_walk_leaves_flax_and_the_thread_working(make, point, exc, monkeypatch):
    health = healthy()
    model = make()
    want = {r.path_text: r.aliases for r in snapshot(model, stats=False).rows}
    owner, name, wrap, k = POINTS[point]
    monkeypatch.setattr(owner, name, wrap(k, exc, getattr(owner, name)))
    for run in (lambda: snapshot(model, stats=False), lambda: StructureCache().describe(model, stats=False)):
        try:
            got = run()
        except exc:  # what was raised reaches the caller; or the fallback (flax's walk) gave the answer
            continue
        assert {r.path_text: r.aliases for r in got.rows} == want
    monkeypatch.undo()
    health.check()


def test_ctrl_c_during_jax_flattening_is_held_until_it_returns():
    health = healthy()
    assert threading.current_thread() is threading.main_thread()
    handler, pressed = signal.getsignal(signal.SIGINT), [0]

    def is_leaf(x):
        if pressed[0] == 0 and isinstance(x, nnx.Variable):
            pressed[0] = 1
            signal.raise_signal(signal.SIGINT)  # the handler runs here, deep inside jax's C++ walk
            pressed[0] = 2
        return False

    with pytest.raises(KeyboardInterrupt):
        flatten(Plain(), is_leaf)
    assert pressed[0] == 2  # the walk went on; KeyboardInterrupt came once jax had returned
    assert signal.getsignal(signal.SIGINT) is handler  # put back
    health.check()


def test_a_predicate_error_is_raised_after_jax_returns():
    health = healthy()

    def is_leaf(x):
        if isinstance(x, nnx.Variable):
            raise ValueError("from the predicate")
        return False

    with pytest.raises(ValueError, match="from the predicate"):
        flatten(Plain(), is_leaf, with_path=True)
    health.check()


def test_a_walk_names_a_cyclic_graph_exactly_as_flax():
    health = healthy()
    model = _shared_points_back()
    walk = walk_graph(model)
    assert {path_text(leaf.path) for leaf in walk.leaves} == set(_flax_paths(model))
    duplicates = {tuple(map(path_text, map(tuple, group))) for group in nnx.find_duplicates(model)}
    assert duplicates == {("", "s1.back"), ("s1", "s2")}
    assert (walk.leaves[0].path, walk.leaves[0].aliases) == (("l", "bias"), (("s1", "back", "l", "bias"),))
    health.check()


def test_a_graph_too_deep_for_jax_recursion_is_walked_by_flax():
    health = healthy()

    class Link(nnx.Module):
        def __init__(self, child):
            self.w, self.child = nnx.Param(jnp.ones(1)), child

    chain = None
    for _ in range(sys.getrecursionlimit() - 100):  # jax's recursion would run out (and leak) here
        chain = Link(chain)
    with pytest.raises(TooDeep):
        flatten(chain)
    assert len(snapshot(chain, stats=False).rows) == sys.getrecursionlimit() - 100
    health.check()


def test_a_refresh_of_the_same_containers_flattens_as_jax_and_stops_at_any_new_or_revisited_one():
    """The warm refresh's walk without paths (flatten_known): jax's answer for the containers a
    flatten entered before, in the same order, tied modules included; None (and the thread intact) as
    soon as a cycle, a chain too deep for jax's recursion, a new container or a tie moved appears, so
    the caller walks it the careful way."""
    health = healthy()
    model = M()
    model.tied = model.l  # a module reached twice: entered twice
    known: list = []
    assert len(flatten(model, visits=known)[0]) == 4
    assert known.count(id(model.l)) == 2
    got = flatten_known(model, known)
    want = jax.tree_util.tree_flatten(model)
    assert got is not None and got[1] == want[1] and all(a is b for a, b in zip(got[0], want[0]))
    model.me = model  # a cycle
    assert flatten_known(model, known) is None
    del model.me

    class Link(nnx.Module):
        def __init__(self, child):
            self.w, self.child = nnx.Param(jnp.ones(1)), child

    chain = None
    for _ in range(sys.getrecursionlimit() - 100):  # jax's recursion would run out (and leak) here
        chain = Link(chain)
    model.chain = chain
    assert flatten_known(model, known) is None
    del model.chain
    model.l = nnx.Linear(2, 2, rngs=nnx.Rngs(1))  # the same shapes in a new module
    assert flatten_known(model, known) is None
    known = []
    flatten(model, visits=known)
    assert flatten_known(model, known) is not None
    model.tied = model.l  # tied again: the same containers, entered in another order
    assert flatten_known(model, known) is None
    health.check()


def test_a_warm_structure_sees_a_too_deep_chain_appear_and_walks_it_with_flax():
    health = healthy()
    model, cache = M(), StructureCache()
    cache.describe(model)
    cache.describe(model)

    class Link(nnx.Module):
        def __init__(self, child):
            self.w, self.child = nnx.Param(jnp.ones(1)), child

    chain = None
    for _ in range(sys.getrecursionlimit() - 100):
        chain = Link(chain)
    model.chain = chain
    assert len(cache.describe(model, stats=False).rows) == 2 + sys.getrecursionlimit() - 100
    health.check()
