"""The issue's real cases: fine-tuning moves some layers, a Linen port via nnx.bridge against its
native NNX model, a model against its nnx.view / set_attributes self (the checkpoint with a resized
layer is in test_checkpoint.py). Both flax stacks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge
from unchanged import assert_unchanged, frozen

import nnx_lab


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.embed = nnx.Linear(4, 16, rngs=rngs)
        self.hidden = nnx.Linear(16, 16, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.head = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(self.drop(nnx.relu(self.hidden(nnx.relu(self.embed(x))))))


def test_fine_tuning_50_steps_moves_only_the_unfrozen_layers():
    model = MLP(nnx.Rngs(0))
    before = nnx.clone(model)
    # fine-tune the head only (a common recipe): the other layers must not move at all
    trainable = nnx.All(nnx.Param, nnx.PathContains("head"))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=trainable)
    x = jax.random.normal(jax.random.key(1), (32, 4))
    y = jnp.sin(x.sum(1, keepdims=True))

    @nnx.jit
    def step(model, optimizer):
        def loss_fn(model):
            return ((model(x) - y) ** 2).mean()

        grads = nnx.grad(loss_fn, argnums=nnx.DiffState(0, trainable))(model)
        optimizer.update(model, grads)  # flax >= 0.11 (both stacks)

    for _ in range(50):
        step(model, optimizer)
    cmp = nnx_lab.compare(before, model)
    moved = [r.path for r in cmp.changed()]
    assert sorted(moved) == ["drop.rngs.count", "head.bias", "head.kernel"]  # Dropout drew 50 keys
    assert [r.path for r in nnx_lab.compare(nnx.state(before, nnx.Param), nnx.state(model, nnx.Param)).changed()][
        :2
    ] in (["head.kernel", "head.bias"], ["head.bias", "head.kernel"])
    assert cmp["embed.kernel"].identical and cmp["hidden.kernel"].identical
    assert cmp["head.kernel"].frac_changed == 1.0 and 0 < cmp["head.kernel"].rel_change < 10
    modules = {m.path: m for m in cmp.modules}
    assert modules["head"].changed == 2 and modules["embed"].identical
    # sorted by change: the moved layer; the RNG counter is a count (0 -> 50), not a relative change
    assert [r.path for r in cmp.rows[:2]] in (["head.bias", "head.kernel"], ["head.kernel", "head.bias"])
    assert cmp["drop.rngs.count"].note == "count 0 \u2192 50" and cmp["drop.rngs.count"].rel_change is None


class DenseStack(nn.Module):  # the bridge guide's Linen model
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(8)(x)
        return nn.Dense(2)(nn.relu(x))


class NativeStack(nnx.Module):  # its NNX port
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(4, 8, rngs=rngs)
        self.linear2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.linear1(x)))


def test_a_linen_port_through_the_bridge_against_its_native_model():
    x = jnp.ones((1, 4))
    linen = bridge.ToNNX(DenseStack(), rngs=nnx.Rngs(0))
    bridge.lazy_init(linen, x)
    native = NativeStack(nnx.Rngs(1))
    linen_params = nnx.state(linen, nnx.Param)
    for ours, theirs in (("linear1", "Dense_0"), ("linear2", "Dense_1")):  # copy the weights across
        for name in ("kernel", "bias"):
            getattr(native, ours).__dict__[name][...] = linen_params[theirs][name][...]
    states = (frozen(linen), frozen(native))
    rename = {"Dense_0": "linear1", "Dense_1": "linear2"}
    cmp = nnx_lab.compare(native, nnx.state(linen, nnx.Param), map=rename)
    assert cmp.identical and cmp.loadable, cmp.verdict
    assert cmp["linear1.kernel"].path_b == "Dense_0.kernel"
    # the whole bridged model: the bridge's own RNG state is in b only
    whole = nnx_lab.compare(native, linen, map=rename)
    assert whole.counts == {"identical": 4, "unexpected": 2}
    assert whole.verdict.startswith("b loads into a: 0 missing, 2 unexpected, 0 shape mismatches")
    assert_unchanged(linen, states[0])  # compare changed neither model
    assert_unchanged(native, states[1])
    assert jnp.array_equal(native(x), linen(x))  # bit-identical weights, same function


def test_a_model_against_its_view_or_its_set_attributes_self_is_identical():
    model = MLP(nnx.Rngs(0))
    if hasattr(nnx, "view"):  # flax >= 0.12.4
        other = nnx.view(model, deterministic=True)
    else:
        other = nnx.clone(model)
        other.set_attributes(deterministic=True)
    assert other.drop.deterministic and not getattr(model.drop, "deterministic", False)
    cmp = nnx_lab.compare(model, other)
    assert cmp.identical and cmp.loadable, cmp.verdict
    model.set_attributes(deterministic=True)  # in place: the same arrays
    assert nnx_lab.compare(model, other).identical


@pytest.mark.parametrize("tol, status", [(0.0, "changed"), (2.0**-8, "equal")])  # bfloat16: 8 significant bits
def test_a_bfloat16_round_trip_is_equal_within_tol(tol, status):
    model = MLP(nnx.Rngs(0))
    low = jax.tree.map(lambda p: p.astype(jnp.bfloat16).astype(jnp.float32), nnx.state(model, nnx.Param))
    scale = max(float(jnp.abs(v).max()) for v in jax.tree.leaves(nnx.state(model, nnx.Param)))
    cmp = nnx_lab.compare(nnx.state(model, nnx.Param), low, tol=tol * scale if tol else 0.0)
    assert cmp["hidden.kernel"].status == status
    assert cmp["hidden.kernel"].cosine > 0.9999
