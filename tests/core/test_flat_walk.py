"""The graph walk from jax's pytree flattening gives exactly flax's walk (iter_graph + find_duplicates),
or steps aside: the same leaves (path, type, metadata, aliases, the very array), the same containers in
the same order, the same root type."""

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

from nnx_lab.core.graph import _walk

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
