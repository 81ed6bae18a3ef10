"""A model walked again reuses its last walk's structure only while nothing moved: every change a
user makes between two walks (a training step, a replaced layer, a Variable of another type, new
metadata, a sow'd tuple) shows in the second walk exactly as a first walk would show it, and the
remembered walk keeps nothing alive."""

import gc
import weakref

import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_lab.core import compat
from nnx_lab.core.graph import _walk, walk_graph


def fresh_walk(obj):
    _walk._RECENT.clear()
    return walk_graph(obj)


def same(w1, w2):
    assert [(l.path, l.type_name, l.param, l.aliases, l.metadata) for l in w1.leaves] == [
        (l.path, l.type_name, l.param, l.aliases, l.metadata) for l in w2.leaves
    ]
    assert all(a.value is b.value for a, b in zip(w1.leaves, w2.leaves))
    assert (w1.nodes, w1.root_type) == (w2.nodes, w2.root_type)


class Net(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(3, 4, rngs=rngs)
        self.b = nnx.Linear(4, 2, rngs=rngs)
        self.count = nnx.BatchStat(jnp.zeros(()))


@pytest.fixture
def net():
    _walk._RECENT.clear()
    return Net(nnx.Rngs(0))


def test_an_unchanged_model_walked_again_is_reused_and_equal(net):
    first = walk_graph(net)
    assert len(_walk._RECENT) == 1
    same(walk_graph(net), fresh_walk(net))
    same(first, walk_graph(net))


def test_new_values_are_read_afresh(net):
    walk_graph(net)
    compat.set_value(net.a.kernel, jnp.ones((3, 4)))  # a training step's update
    again = walk_graph(net)
    [kernel] = [l for l in again.leaves if l.path == ("a", "kernel")]
    assert kernel.value is compat.get_value(net.a.kernel)
    same(again, fresh_walk(net))


def test_a_replaced_layer_a_new_type_and_new_metadata_are_seen(net):
    walk_graph(net)
    net.b = nnx.Linear(4, 5, rngs=nnx.Rngs(1))  # same structure, other Variables and shapes
    same(walk_graph(net), fresh_walk(net))
    walk_graph(net)
    net.count = nnx.Param(jnp.zeros(()))  # the same path, another Variable type
    again = walk_graph(net)
    assert [l.type_name for l in again.leaves if l.path == ("count",)] == ["Param"]
    same(again, fresh_walk(net))
    walk_graph(net)
    kernel = vars(net.a)["kernel"]  # the Variable itself
    if hasattr(kernel, "set_metadata"):
        kernel.set_metadata("note", "frozen")
    else:  # flax 0.11: an attribute is metadata
        kernel.note = "frozen"
    same(walk_graph(net), fresh_walk(net))
    walk_graph(net)
    net.c = nnx.Linear(2, 2, rngs=nnx.Rngs(2))  # a new attribute: another treedef
    same(walk_graph(net), fresh_walk(net))


def test_a_sowed_tuple_is_walked_afresh(net):
    walk_graph(net)
    net.count = nnx.Intermediate((jnp.zeros(2), jnp.ones(2)))
    again = walk_graph(net)
    assert [l.path for l in again.leaves if l.path[0] == "count"] == [("count", 0), ("count", 1)]
    same(again, fresh_walk(net))


def test_the_remembered_walk_keeps_nothing_alive():
    _walk._RECENT.clear()
    net = Net(nnx.Rngs(0))
    walk_graph(net)
    old = weakref.ref(compat.get_value(net.b.kernel))
    net.b = nnx.Linear(4, 2, rngs=nnx.Rngs(1))  # the old layer's Variables and arrays: only the cache could hold them
    gc.collect()
    assert old() is None
    gone = weakref.ref(net)
    del net
    gc.collect()
    assert gone() is None and len(_walk._RECENT) == 0


class Odd:
    """A static attribute whose == raises (a user's type, or a numpy array's ambiguous truth)."""

    def __eq__(self, other):
        raise ValueError("ambiguous")

    __hash__ = object.__hash__


def test_a_static_attribute_whose_eq_raises_is_walked_afresh():
    _walk._RECENT.clear()
    net = Net(nnx.Rngs(0))
    net.odd = Odd()
    walk_graph(net)
    net.odd = Odd()  # another one: the treedefs' comparison calls its __eq__
    compat.set_value(net.a.kernel, jnp.ones((3, 4)))
    again = walk_graph(net)
    assert [l.value for l in again.leaves if l.path == ("a", "kernel")][0] is compat.get_value(net.a.kernel)


def test_a_model_collected_while_the_cache_is_locked_does_not_deadlock():
    """A weak reference's callback runs inside whatever garbage collection frees the model, which may
    start while this very thread holds the cache's lock (inside a walk): it must not wait for it."""
    import threading

    _walk._RECENT.clear()
    done = threading.Event()

    def run():
        net = Net(nnx.Rngs(0))
        walk_graph(net)
        with _walk._RECENT._lock:  # as a collection inside remember() or reuse() would find it
            del net
            gc.collect()
        done.set()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert done.wait(60), "the collection's callback waited for a lock its own thread held"
    assert len(_walk._RECENT) == 0
