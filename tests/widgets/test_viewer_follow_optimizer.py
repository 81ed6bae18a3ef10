"""%nnx_watch --optimizer NAME (and watch(model, optimizer="name")): the optimizer's state beside the
parameters, followed by name with the model in a functional loop that rebinds both."""

import re

import numpy as np
import pytest
from IPython.core.error import UsageError

import nnx_lab
from nnx_lab.core.stats import STAT_NAMES
from nnx_lab.core.training import leaf_paths

NORM = STAT_NAMES.index("norm")
SETUP = """\
import jax, optax, jax.numpy as jnp
from flax import nnx
model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1)))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
graphdef, state = nnx.split((model, optimizer))

@jax.jit
def train_step(state, x):
    model, optimizer = nnx.merge(graphdef, state)
    grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
    optimizer.update(model, grads)
    return nnx.state((model, optimizer))
"""
STEP = "state = train_step(state, jnp.ones((5, 3)))\nmodel, optimizer = nnx.merge(graphdef, state)\n"


def run(ip, code):
    result = ip.run_cell(code)
    assert result.success, result.error_in_exec or result.error_before_exec


def mu_norms(optimizer):
    """‖mu‖ per parameter path, from the optimizer's own state (numpy)."""
    out = {}
    for path, leaf in zip(*leaf_paths(optimizer.opt_state)):
        if "mu" in path:
            out[path[path.index("mu") + 1 :]] = float(np.sqrt((np.asarray(leaf, np.float64) ** 2).sum()))
    return out


def shown_mu(viewer):
    snap = viewer.last_snapshot
    return snap, {path: snap.series.matrices["mu"][i, NORM] for i, path in enumerate(snap.paths)}


def test_nnx_watch_optimizer_follows_the_optimizer_a_functional_loop_rebinds(ip):
    run(ip, SETUP)
    ip.run_line_magic("nnx_watch", "model --optimizer optimizer --as viewer")
    viewer = ip.user_ns["viewer"]
    assert viewer.status["message"] == "following `model` and its optimizer `optimizer`"
    for step in range(1, 4):
        run(ip, STEP)  # new model and optimizer objects: both names followed
        snap, shown = shown_mu(viewer)
        assert viewer.status["state"] == "live"
        assert snap.series.opt_step == step
        want = mu_norms(ip.user_ns["optimizer"])
        assert set(want) == set(shown) and all(v > 0 for v in want.values())
        for path, norm in want.items():
            assert shown[path] == pytest.approx(norm, rel=1e-3)


def test_a_followed_optimizer_name_rebound_to_something_else_is_a_status_then_recovers(ip):
    run(ip, SETUP)
    ip.run_line_magic("nnx_watch", "model --optimizer optimizer --as viewer")
    viewer = ip.user_ns["viewer"]
    run(ip, "saved = optimizer; optimizer = 3")
    viewer.last_snapshot
    assert viewer.status["state"] == "live"  # the model's rows go on refreshing
    assert viewer.status["message"] == (
        "following `model` and its optimizer `optimizer`; optimizer: `optimizer` is an int, not an nnx.Optimizer"
    )
    run(ip, "del optimizer")
    viewer.last_snapshot
    assert viewer.status["message"].endswith("optimizer: `optimizer` is not defined")
    run(ip, "optimizer = saved\n" + STEP)
    snap, _ = shown_mu(viewer)
    assert viewer.status["message"] == "following `model` and its optimizer `optimizer`"
    assert snap.series.opt_step == 1


def test_nnx_watch_pin_pins_the_optimizer_too(ip):
    run(ip, SETUP)
    ip.run_line_magic("nnx_watch", "model --pin --optimizer optimizer --as viewer")
    viewer = ip.user_ns["viewer"]
    assert "following" not in viewer.status["message"]
    snap, shown = shown_mu(viewer)
    for path, norm in mu_norms(ip.user_ns["optimizer"]).items():
        assert shown[path] == pytest.approx(norm, abs=1e-6)


@pytest.mark.parametrize(
    "line, message",
    [
        ("model --optimizer nosuch --as viewer", "--optimizer 'nosuch': name 'nosuch' is not defined"),
        ("model --optimizer model --as viewer", "--optimizer model is a Sequential, not an nnx.Optimizer"),
        ("model --optimizer optimizer.tx --as viewer", "--optimizer optimizer.tx is a GradientTransformation"),
        ("model --pin --optimizer 3 --as viewer", "--optimizer 3 is an int, not an nnx.Optimizer"),
    ],
)
def test_nnx_watch_optimizer_that_is_missing_or_no_optimizer_is_one_line_and_changes_nothing(
    ip, monkeypatch, line, message
):
    run(ip, SETUP)
    shown = []
    monkeypatch.setattr(ip.display_pub, "publish", lambda *a, **k: shown.append(a))  # nothing displayed either
    ip.user_ns.pop("viewer", None)
    with pytest.raises(UsageError, match=re.escape(message)) as e:
        ip.run_line_magic("nnx_watch", line)
    assert "\n" not in str(e.value)
    assert "viewer" not in ip.user_ns and not shown


def test_watch_takes_the_optimizer_by_name(ip):
    run(ip, SETUP)
    viewer = nnx_lab.watch("model", optimizer="optimizer", display=False)
    assert viewer.status["message"] == "following `model` and its optimizer `optimizer`"
    run(ip, STEP)
    snap, shown = shown_mu(viewer)
    assert snap.series.opt_step == 1
    with pytest.raises(TypeError, match=re.escape("optimizer: `nosuch` is not defined")):
        nnx_lab.watch("model", optimizer="nosuch", display=False)
