"""The walk of a model and its side effects: the cyclic collector is off while a snapshot is taken and
back as the user had it afterwards; the walk from jax's pytree flattening (and the graph index) gives
exactly flax's walk or steps aside to it; a model walked again (a viewer's refresh, a second snapshot)
reuses its last structure only while nothing moved, keeps nothing alive, and a structure that cannot
be flattened is said once in the log.

Reaches inside core (why this file may): the paused collector is a process-wide side effect of a walk,
its nesting across threads is checked on paused_gc itself, and the walk is spied on where it runs; the
fast walks and the remembered walks are the engine's own choices with the same result as flax's walk,
so each path is compared with the other (forced off) and the caches are read where they are kept.
"""

import gc
import logging
import threading
import weakref

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core._gc import paused_gc
from nnx_lab.core.graph import _index, _walk, index_graph, walk_graph
from nnx_lab.core.snapshot import _structure, remembered
from nnx_lab.core.summary import summary


@pytest.fixture
def gc_restored():
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


def test_snapshot_runs_without_the_collector_and_restores_it(gc_restored, monkeypatch):
    seen = []
    from nnx_lab.core.snapshot import _structure

    real = _structure.walk_graph
    monkeypatch.setattr(_structure, "walk_graph", lambda obj: (seen.append(gc.isenabled()), real(obj))[1])
    gc.enable()
    snap = nnx_lab.snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    assert seen == [False] and gc.isenabled() and snap["kernel"].stats["norm"] > 0
    gc.disable()  # a user who turned it off keeps it off
    nnx_lab.snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    assert not gc.isenabled()


def test_nested_and_failing_blocks_restore_the_collector(gc_restored):
    gc.enable()
    with pytest.raises(ZeroDivisionError):
        with paused_gc():
            with paused_gc():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer block is still running
            1 / 0
    assert gc.isenabled()


def test_overlapping_blocks_on_two_threads(gc_restored):
    gc.enable()
    inside, leave = threading.Event(), threading.Event()

    def other():
        with paused_gc():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with paused_gc():
        pass
    assert not gc.isenabled()  # the other thread's block still runs
    leave.set()
    t.join()
    assert gc.isenabled()


# ---------------------------------------------------------------------------- the flattened walk
# The graph walk from jax's pytree flattening gives exactly flax's walk (iter_graph + find_duplicates),
# or steps aside: the same leaves (path, type, metadata, aliases, the very array), the same containers in
# the same order, the same root type.


LIST = getattr(nnx, "List", list)  # flax 0.11 keeps a plain list of Modules
DATA = getattr(nnx, "data", lambda x: x)


def flax_walk(obj, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(_walk, "_flat_walk", lambda o: None)
        return _walk.walk_graph(obj)


def same(a, b):
    assert a.root_type == b.root_type
    assert list(a.nodes.items()) == list(b.nodes.items())
    assert [(l.path, l.type_name, l.aliases) for l in a.leaves] == [(l.path, l.type_name, l.aliases) for l in b.leaves]
    assert all(x.value is y.value for x, y in zip(a.leaves, b.leaves))
    assert [l.metadata for l in a.leaves] == [l.metadata for l in b.leaves]


class Block(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.norm = nnx.LayerNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)


class Net(nnx.Module):
    def __init__(self, rngs):
        self.blocks = LIST([Block(rngs) for _ in range(3)])
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.heads = DATA({"a": nnx.Linear(4, 2, rngs=rngs), "b": nnx.Linear(4, 3, rngs=rngs)})
        self.pair = DATA((nnx.Linear(2, 2, rngs=rngs), nnx.Embed(5, 2, rngs=rngs)))
        self.count = nnx.BatchStat(jnp.zeros((), jnp.int32))


class Sows(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        h = self.lin(x)
        self.sow(nnx.Intermediate, "h", h)
        self.sow(nnx.Intermediate, "h", 2 * h)
        return h


def stacked():
    @nnx.vmap(in_axes=0, out_axes=0)
    def make(key):
        return nnx.Linear(3, 3, rngs=nnx.Rngs(key))

    return make(jax.random.split(jax.random.key(0), 4))


def sowed():
    m = Sows(nnx.Rngs(0))
    m(jnp.ones((1, 2)))
    return m


def optimizer():
    model = Net(nnx.Rngs(0))
    return nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)


FAST = {
    "Linear": lambda: nnx.Linear(3, 4, rngs=nnx.Rngs(0)),
    "Net": lambda: Net(nnx.Rngs(0)),
    "state": lambda: nnx.state(Net(nnx.Rngs(0))),
    "split state": lambda: nnx.split(Net(nnx.Rngs(0)), nnx.Param, ...)[2],
    "optimizer": optimizer,
    "stacked": stacked,
    "sowed": sowed,
    "abstract": lambda: nnx.eval_shape(lambda: Net(nnx.Rngs(0))),
}


@pytest.mark.parametrize("name", sorted(FAST))
def test_the_flattened_walk_is_flax_walk(name, monkeypatch):
    obj = FAST[name]()
    fast = _walk._flat_walk(obj)
    assert fast is not None, f"{name}: the fast walk stepped aside"
    same(fast, flax_walk(obj, monkeypatch))
    same(_walk.walk_graph(obj), fast)


class Tied(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(4, 2, rngs=rngs)
        self.head = self.embed


class SharedVar(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(2, 2, rngs=rngs)
        self.b = nnx.Linear(2, 2, rngs=rngs)
        self.b.kernel = self.a.kernel


class Hollow(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)
        self.drop = nnx.Dropout(0.5)  # no rngs: a Module holding no Variable


class Counted(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)
        self.steps = DATA(3)  # a number marked as data: a leaf that is no Variable


STEP_ASIDE = {
    "tied module": lambda: Tied(nnx.Rngs(0)),
    "shared Variable": lambda: SharedVar(nnx.Rngs(0)),
    "empty Module": lambda: Hollow(nnx.Rngs(0)),
    "data number": lambda: Counted(nnx.Rngs(0)),
    "dict of arrays": lambda: {"params": {"w": jnp.ones(2)}},
}


@pytest.mark.parametrize("name", sorted(STEP_ASIDE))
def test_the_flattened_walk_steps_aside_where_only_flax_knows(name, monkeypatch):
    obj = STEP_ASIDE[name]()
    assert _walk._flat_walk(obj) is None
    same(_walk.walk_graph(obj), flax_walk(obj, monkeypatch))


def test_tied_weights_keep_their_alias():
    walk = _walk.walk_graph(Tied(nnx.Rngs(0)))
    assert [(l.path, l.aliases) for l in walk.leaves] == [(("embed", "embedding"), (("head", "embedding"),))]


def test_every_container_kind(net, monkeypatch):
    """A user Module, nnx.List, nnx.Dict, nnx.Sequential holding a function, a bare Variable."""
    fast = _walk._flat_walk(net)
    assert fast is not None
    same(fast, flax_walk(net, monkeypatch))


# --------------------------------------------------------------------------- the flattened index
# The graph index (every Module and Variable once, at flax's path) from jax's flattening equals flax's
# walk (nnx.iter_graph), or steps aside to it; and a summary made from either is the same.


PYTREE_MODULES = hasattr(nnx, "Pytree")  # flax >= 0.12: Modules are jax pytrees (0.11: flax walks every one)


class IndexBlock(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.norm = nnx.LayerNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.drop(self.norm(nnx.relu(self.lin(x))))


class IndexNet(nnx.Module):
    def __init__(self, rngs):
        self.blocks = LIST([IndexBlock(rngs) for _ in range(3)])
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.heads = DATA({"a": nnx.Linear(4, 2, rngs=rngs), "b": nnx.Linear(4, 3, rngs=rngs)})
        self.pair = DATA((nnx.Linear(2, 2, rngs=rngs), nnx.Embed(5, 2, rngs=rngs)))
        self.count = nnx.BatchStat(jnp.zeros((), jnp.int32))
        self.idle = nnx.Dropout(0.5)  # no rngs: a Module that holds no Variable

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.heads["a"](self.bn(x)) + self.pair[0](self.heads["b"](x)[:, :2])


class IndexTied(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(4, 2, rngs=rngs)
        self.head = self.embed

    def __call__(self, x):
        return self.head.attend(self.embed(x))


class IndexSharedVar(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(2, 2, rngs=rngs)
        self.b = nnx.Linear(2, 2, rngs=rngs)
        self.b.kernel = self.a.kernel


def index_stacked():
    @nnx.vmap(in_axes=0, out_axes=0)
    def make(key):
        return nnx.Linear(3, 3, rngs=nnx.Rngs(key))

    return make(jax.random.split(jax.random.key(0), 4))


def cyclic():
    model = IndexBlock(nnx.Rngs(0))
    model.lin.parent = model  # a child that keeps its parent
    return model


INDEX_FAST = {
    "Linear": lambda: nnx.Linear(3, 4, rngs=nnx.Rngs(0)),
    "IndexNet": lambda: IndexNet(nnx.Rngs(0)),
    "index_stacked": index_stacked,
    "abstract": lambda: nnx.eval_shape(lambda: IndexNet(nnx.Rngs(0))),
    "optimizer": lambda: nnx.Optimizer(IndexNet(nnx.Rngs(0)), optax.adam(1e-3), wrt=nnx.Param),
}
INDEX_STEP_ASIDE = {
    "tied module": lambda: IndexTied(nnx.Rngs(0)),
    "shared Variable": lambda: IndexSharedVar(nnx.Rngs(0)),
    "reference cycle": cyclic,
}


def ids(index):
    return {p: id(m) for p, m in index.modules.items()}, {p: id(v) for p, v in index.variables.items()}


@pytest.mark.parametrize("name", sorted(INDEX_FAST))
def test_the_flattened_index_is_flax_walk(name):
    obj = INDEX_FAST[name]()
    fast = _index._flat_index(obj)
    if not PYTREE_MODULES:  # no Module is a pytree: jax cannot walk one, flax does
        assert fast is None
        return
    assert fast is not None, f"{name}: the fast index stepped aside"
    assert ids(fast) == ids(_index._flax_index(obj))
    assert ids(index_graph(obj)) == ids(fast)


@pytest.mark.parametrize("name", sorted(INDEX_STEP_ASIDE))
def test_the_flattened_index_steps_aside_where_only_flax_knows(name):
    obj = INDEX_STEP_ASIDE[name]()
    assert _index._flat_index(obj) is None
    assert ids(index_graph(obj)) == ids(_index._flax_index(obj))


def test_a_module_jax_does_not_walk_steps_aside():
    if not PYTREE_MODULES:
        pytest.skip("flax 0.11: no pytree Modules")

    class Opaque(nnx.Module, pytree=False):  # a graph node that is a leaf to jax
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)

    class Outer(nnx.Module):
        def __init__(self, rngs):
            self.inner = Opaque(rngs)
            self.lin = nnx.Linear(2, 2, rngs=rngs)

    obj = Outer(nnx.Rngs(0))
    assert _index._flat_index(obj) is None
    index = index_graph(obj)
    assert set(index.modules) == {(), ("inner",), ("inner", "lin"), ("lin",)}
    assert set(index.variables) == {(m, "lin", v) for m in ("inner",) for v in ("kernel", "bias")} | {
        ("lin", "kernel"),
        ("lin", "bias"),
    }


@pytest.mark.parametrize(
    "make, x",
    [(lambda: IndexNet(nnx.Rngs(0)), jnp.ones((2, 4))), (lambda: IndexTied(nnx.Rngs(0)), jnp.array([1, 2]))],
    ids=["IndexNet", "IndexTied"],
)
def test_a_summary_is_the_same_from_either_walk(make, x, monkeypatch):
    """The rows (paths, parameters own and total, FLOPs) do not depend on which walk indexed the model."""
    fast = summary(make(), x, memory=False)
    with monkeypatch.context() as m:
        m.setattr(_index, "_flat_index", lambda obj: None)
        slow = summary(make(), x, memory=False)
    rows = [r.to_dict() for r in fast.rows]
    assert rows == [r.to_dict() for r in slow.rows]
    assert len(rows) > 2 and rows[0]["params_total"]["Param"][0] > 0


# --------------------------------------------------------------------------------- a walk reused
# A model walked again (compare, a second snapshot) reuses its last walk's structure only while
# nothing moved: every change a user makes between two walks (a training step, a replaced layer, a
# Variable of another type, new metadata, a sow'd tuple) shows in the second walk exactly as a first
# walk would show it, and the remembered structure keeps nothing alive.


def cached_walk(obj):
    """What compare() reads of ``obj``: its remembered structure's walk."""
    return remembered(obj).walk(obj)


def same_walk(w1, w2):
    assert [(l.path, l.type_name, l.param, l.aliases, l.metadata) for l in w1.leaves] == [
        (l.path, l.type_name, l.param, l.aliases, l.metadata) for l in w2.leaves
    ]
    assert all(a.value is b.value for a, b in zip(w1.leaves, w2.leaves))
    assert (w1.nodes, w1.root_type) == (w2.nodes, w2.root_type)


class RewalkNet(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(3, 4, rngs=rngs)
        self.b = nnx.Linear(4, 2, rngs=rngs)
        self.count = nnx.BatchStat(jnp.zeros(()))


@pytest.fixture
def rewalk_net():
    return RewalkNet(nnx.Rngs(0))


def test_an_unchanged_model_walked_again_is_reused_and_equal(rewalk_net):
    first = cached_walk(rewalk_net)
    again = cached_walk(rewalk_net)
    assert (remembered(rewalk_net).walks, remembered(rewalk_net).hits) == (1, 1)
    same_walk(again, walk_graph(rewalk_net))
    same_walk(first, again)


def test_new_values_are_read_afresh(rewalk_net):
    cached_walk(rewalk_net)
    compat.set_value(rewalk_net.a.kernel, jnp.ones((3, 4)))  # a training step's update
    again = cached_walk(rewalk_net)
    [kernel] = [l for l in again.leaves if l.path == ("a", "kernel")]
    assert kernel.value is compat.get_value(rewalk_net.a.kernel)
    same_walk(again, walk_graph(rewalk_net))
    assert remembered(rewalk_net).hits == 1


def test_a_replaced_layer_a_new_type_and_new_metadata_are_seen(rewalk_net):
    cached_walk(rewalk_net)
    rewalk_net.b = nnx.Linear(4, 5, rngs=nnx.Rngs(1))  # same structure, other Variables and shapes
    same_walk(cached_walk(rewalk_net), walk_graph(rewalk_net))
    cached_walk(rewalk_net)
    rewalk_net.count = nnx.Param(jnp.zeros(()))  # the same path, another Variable type
    again = cached_walk(rewalk_net)
    assert [l.type_name for l in again.leaves if l.path == ("count",)] == ["Param"]
    same_walk(again, walk_graph(rewalk_net))
    cached_walk(rewalk_net)
    kernel = vars(rewalk_net.a)["kernel"]  # the Variable itself
    if hasattr(kernel, "set_metadata"):
        kernel.set_metadata("note", "frozen")
    else:  # flax 0.11: an attribute is metadata
        kernel.note = "frozen"
    same_walk(cached_walk(rewalk_net), walk_graph(rewalk_net))
    cached_walk(rewalk_net)
    rewalk_net.c = nnx.Linear(2, 2, rngs=nnx.Rngs(2))  # a new attribute: another treedef
    same_walk(cached_walk(rewalk_net), walk_graph(rewalk_net))


def test_a_sowed_tuple_is_walked_afresh(rewalk_net):
    cached_walk(rewalk_net)
    rewalk_net.count = nnx.Intermediate((jnp.zeros(2), jnp.ones(2)))
    again = cached_walk(rewalk_net)
    assert [l.path for l in again.leaves if l.path[0] == "count"] == [("count", 0), ("count", 1)]
    same_walk(again, walk_graph(rewalk_net))


def test_compare_reads_a_model_seen_before_from_its_structure(rewalk_net):
    """compare() of a model snapshotted (or compared) before flattens it, not walks it, and its
    numbers are those of the arrays now."""
    other = RewalkNet(nnx.Rngs(0))
    nnx_lab.snapshot(rewalk_net)
    compat.set_value(rewalk_net.a.kernel, compat.get_value(other.a.kernel) + 1.0)
    result = nnx_lab.compare(rewalk_net, other)
    assert (remembered(rewalk_net).walks, remembered(rewalk_net).hits) == (1, 1)
    fresh = nnx_lab.compare(nnx.clone(rewalk_net), other)
    assert str(result) == str(fresh) and "a.kernel" in str(result)


def test_the_remembered_walk_keeps_nothing_alive():
    rewalk_net = RewalkNet(nnx.Rngs(0))
    cached_walk(rewalk_net)
    cached_walk(rewalk_net)
    old = weakref.ref(compat.get_value(rewalk_net.b.kernel))
    rewalk_net.b = nnx.Linear(
        4, 2, rngs=nnx.Rngs(1)
    )  # the old layer's Variables and arrays: only the cache could hold them
    gc.collect()
    assert old() is None  # nor its Variable (which holds it)
    gone = weakref.ref(rewalk_net)
    del rewalk_net
    gc.collect()
    assert gone() is None


class Odd:
    """A static attribute whose == raises (a user's type, or a numpy array's ambiguous truth)."""

    def __eq__(self, other):
        raise ValueError("ambiguous")

    __hash__ = object.__hash__


def test_a_static_attribute_whose_eq_raises_is_walked_afresh():
    rewalk_net = RewalkNet(nnx.Rngs(0))
    rewalk_net.odd = Odd()
    cached_walk(rewalk_net)
    rewalk_net.odd = Odd()  # another one: the treedefs' comparison calls its __eq__
    compat.set_value(rewalk_net.a.kernel, jnp.ones((3, 4)))
    again = cached_walk(rewalk_net)
    assert [l.value for l in again.leaves if l.path == ("a", "kernel")][0] is compat.get_value(rewalk_net.a.kernel)
    snap = nnx_lab.snapshot(rewalk_net)  # and a snapshot of it (a viewer's refresh) works as well
    assert snap["a.kernel"].stats["mean"] == 1.0


# ----------------------------------------------------------------- a snapshot's structure reused
# A one-off ``snapshot()`` of a model seen before reuses its structure, as a viewer's refresh does,
# and still sees every change.


def test_a_second_snapshot_of_an_unchanged_model_is_not_walked_again():
    model = nnx.Sequential(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.Linear(8, 2, rngs=nnx.Rngs(1)))
    first = nnx_lab.snapshot(model)
    structure = remembered(model)
    assert structure.walks == 1 and structure.hits == 0
    second = nnx_lab.snapshot(model)
    assert structure.walks == 1 and structure.hits == 1
    assert [r.path for r in second.rows] == [r.path for r in first.rows]
    assert second.rows[1].stats == first.rows[1].stats


def test_a_changed_model_is_seen_by_the_next_snapshot():
    model = nnx.Sequential(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.Linear(8, 2, rngs=nnx.Rngs(1)))
    nnx_lab.snapshot(model)
    nnx_lab.snapshot(model)
    model.layers[0].kernel.value = jnp.full((4, 8), 3.0)  # new values, same structure
    snap = nnx_lab.snapshot(model)
    kernel = next(r for r in snap.rows if r.path_text == "layers[0].kernel")
    assert kernel.stats["mean"] == 3.0 and kernel.stats["std"] == 0.0
    model.layers[1] = nnx.Linear(8, 5, rngs=nnx.Rngs(2))  # a new structure
    snap = nnx_lab.snapshot(model)
    assert next(r for r in snap.rows if r.path_text == "layers[1].kernel").shape == (8, 5)


def test_structures_are_held_weakly_and_few():
    models = [nnx.Linear(2, 2, rngs=nnx.Rngs(i)) for i in range(_structure.REMEMBERED + 4)]
    for m in models:
        nnx_lab.snapshot(m)
    assert len(_structure._remembered) <= _structure.REMEMBERED
    refs = [weakref.ref(m) for m in models]
    del models, m
    gc.collect()
    assert all(r() is None for r in refs)  # the remembered structures hold none of them
    keep = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx_lab.snapshot(keep)  # entries of models that are gone are dropped
    assert [ref() for ref, _ in _structure._remembered.values()] == [keep]


# --------------------------------------------------------------------- a structure not flattened
# A fallback that costs speed on every refresh is said once at INFO (then at DEBUG): a bug in a hot
# path shows in the log, not only as slowness, and the refresh still works.


def test_a_flatten_that_fails_at_every_refresh_is_logged_once_at_info(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the hot path")

    monkeypatch.setattr(_structure, "flatten", broken)  # what StructureCache calls on every refresh
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    caplog.set_level(logging.DEBUG, logger="nnx_lab")
    viewer = nnx_lab.watch(model, display=False)
    try:
        for _ in range(3):
            viewer.refresh()
        assert viewer.status["state"] == "live"
        assert sorted(r.path_text for r in viewer.watcher.snapshot.rows) == ["bias", "kernel"]
    finally:
        viewer.close()
    said = [r for r in caplog.records if "not flattened" in r.getMessage()]
    infos = [r for r in said if r.levelno == logging.INFO]
    assert len(infos) == 1, [(r.levelname, r.getMessage()) for r in said]
    assert "Linear not flattened: flax walks it at every refresh (slower; said once)" in infos[0].getMessage()
    assert "RuntimeError: a bug in the hot path" in infos[0].getMessage()
    assert len(said) >= 3 and all(r.levelno == logging.DEBUG for r in said if r is not infos[0])
