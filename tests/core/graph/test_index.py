"""The graph index (every Module and Variable once, at flax's path) from jax's flattening equals flax's
walk (nnx.iter_graph), or steps aside to it; and a summary made from either is the same."""

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

from nnx_lab.core.graph import _index, index_graph
from nnx_lab.core.summary import summary

LIST = getattr(nnx, "List", list)  # flax 0.11 keeps a plain list of Modules
DATA = getattr(nnx, "data", lambda x: x)
PYTREE_MODULES = hasattr(nnx, "Pytree")  # flax >= 0.12: Modules are jax pytrees (0.11: flax walks every one)


class Block(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.norm = nnx.LayerNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.drop(self.norm(nnx.relu(self.lin(x))))


class Net(nnx.Module):
    def __init__(self, rngs):
        self.blocks = LIST([Block(rngs) for _ in range(3)])
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.heads = DATA({"a": nnx.Linear(4, 2, rngs=rngs), "b": nnx.Linear(4, 3, rngs=rngs)})
        self.pair = DATA((nnx.Linear(2, 2, rngs=rngs), nnx.Embed(5, 2, rngs=rngs)))
        self.count = nnx.BatchStat(jnp.zeros((), jnp.int32))
        self.idle = nnx.Dropout(0.5)  # no rngs: a Module that holds no Variable

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.heads["a"](self.bn(x)) + self.pair[0](self.heads["b"](x)[:, :2])


class Tied(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(4, 2, rngs=rngs)
        self.head = self.embed

    def __call__(self, x):
        return self.head.attend(self.embed(x))


class SharedVar(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(2, 2, rngs=rngs)
        self.b = nnx.Linear(2, 2, rngs=rngs)
        self.b.kernel = self.a.kernel


def stacked():
    @nnx.vmap(in_axes=0, out_axes=0)
    def make(key):
        return nnx.Linear(3, 3, rngs=nnx.Rngs(key))

    return make(jax.random.split(jax.random.key(0), 4))


def cyclic():
    model = Block(nnx.Rngs(0))
    model.lin.parent = model  # a child that keeps its parent
    return model


FAST = {
    "Linear": lambda: nnx.Linear(3, 4, rngs=nnx.Rngs(0)),
    "Net": lambda: Net(nnx.Rngs(0)),
    "stacked": stacked,
    "abstract": lambda: nnx.eval_shape(lambda: Net(nnx.Rngs(0))),
    "optimizer": lambda: nnx.Optimizer(Net(nnx.Rngs(0)), optax.adam(1e-3), wrt=nnx.Param),
}
STEP_ASIDE = {
    "tied module": lambda: Tied(nnx.Rngs(0)),
    "shared Variable": lambda: SharedVar(nnx.Rngs(0)),
    "reference cycle": cyclic,
}


def ids(index):
    return {p: id(m) for p, m in index.modules.items()}, {p: id(v) for p, v in index.variables.items()}


@pytest.mark.parametrize("name", sorted(FAST))
def test_the_flattened_index_is_flax_walk(name):
    obj = FAST[name]()
    fast = _index._flat_index(obj)
    if not PYTREE_MODULES:  # no Module is a pytree: jax cannot walk one, flax does
        assert fast is None
        return
    assert fast is not None, f"{name}: the fast index stepped aside"
    assert ids(fast) == ids(_index._flax_index(obj))
    assert ids(index_graph(obj)) == ids(fast)


@pytest.mark.parametrize("name", sorted(STEP_ASIDE))
def test_the_flattened_index_steps_aside_where_only_flax_knows(name):
    obj = STEP_ASIDE[name]()
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
    [(lambda: Net(nnx.Rngs(0)), jnp.ones((2, 4))), (lambda: Tied(nnx.Rngs(0)), jnp.array([1, 2]))],
    ids=["Net", "Tied"],
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
