"""The viewer's series on the wire: watch(model, optimizer=...), viewer.tick/log(grads=...)."""

import time

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from live_helpers import Clock
from viewer_wire import Wire

import nnx_lab
from nnx_lab.core.stats import STAT_NAMES
from nnx_lab.core.training import GRAD, leaf_paths

NORM = STAT_NAMES.index("norm")


def setup():
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1)))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    def step():
        grads = nnx.grad(lambda m: (m(jnp.ones((5, 3))) ** 2).mean())(model)
        opt.update(model, grads)
        return grads

    return model, opt, step


def moved_clock(viewer) -> Clock:
    """A viewer's refresh engine on a clock the test moves (its injectable ``clock``), from now on."""
    clock = viewer.watcher.engine.clock = Clock(time.monotonic())  # the times it holds stay comparable
    return clock


def decode(content, buffers, rows):
    meta = content["series"]
    values = np.frombuffer(bytes(buffers[1]), np.float32).reshape(len(meta["names"]), len(meta["stats"]) + 1, rows)
    return meta, values


def test_a_loop_with_log_sends_gradient_and_optimizer_numbers_beside_the_statistics():
    model, opt, step = setup()
    viewer = nnx_lab.watch(model, optimizer=opt, max_rate=100.0, display=False)
    wire = Wire(viewer)
    clock = moved_clock(viewer)
    logged = {}
    for _ in viewer.track(range(3)):
        grads = logged[viewer.watcher.ticks + 1] = step()
        clock.later()  # every tick refreshes
        viewer.log(grads=grads)
    snap = viewer.last_snapshot
    viewer.send_stats()
    content, buffers = wire.stats_messages()[-1]
    meta, values = decode(content, buffers, len(snap))
    # (the measured update ratio follows once its program has compiled: in a run where an earlier test
    # compiled it for this structure, at once)
    assert meta["names"] in (["grad", "mu", "nu"], ["grad", "mu", "nu", "update"]) and meta["opt_step"] == 3
    # The loop's end refresh takes the last step's gradients (its tick leaves them to it: a tick's
    # refresh may be left without them while their program compiles, the end refresh never is).
    assert "grad" not in meta["stale"] and meta["steps"]["grad"] == 3
    grads = logged[meta["steps"]["grad"]]
    assert meta["unmatched"] == [] and meta["unmatched_total"] == 0  # Adam's count is the optimizer step
    g = dict(zip(*leaf_paths(grads)))
    param_norm = snap.stat_matrix[:, NORM]
    for i, path in enumerate(snap.paths):
        want = float(np.sqrt((np.asarray(g[path], np.float64) ** 2).sum()))
        assert values[0, NORM, i] == pytest.approx(want, rel=1e-3)  # rounded to 4 digits, float32
        assert values[0, -1, i] == pytest.approx(want / param_norm[i], rel=2e-3)
    assert viewer.status["state"] == "live"


def test_the_trait_carries_the_series_when_the_rows_are_sent():
    model, opt, _ = setup()
    viewer = nnx_lab.watch(model, optimizer=opt, display=False)
    series = viewer.snapshot["series"]
    assert series["names"] == ["mu", "nu"] and series["opt_step"] == 0
    assert len(series["values"]) == 2 * (len(STAT_NAMES) + 1) * len(viewer.last_snapshot)


def test_without_series_the_payload_is_as_before():
    model, _, _ = setup()
    viewer = nnx_lab.watch(model, display=False)
    wire = Wire(viewer)
    viewer.send_stats()
    content, buffers = wire.stats_messages()[-1]
    assert "series" not in viewer.snapshot and "series" not in content and len(buffers) == 1


def test_bad_grads_in_a_viewer_say_so_in_its_status():
    model, opt, _ = setup()
    viewer = nnx_lab.watch(model, display=False, max_rate=100.0)
    moved_clock(viewer).later()  # the tick refreshes
    viewer.tick(grads={"layers": {0: {"kernel": "text"}}})
    viewer.last_snapshot
    assert "not an array (str)" in viewer.status["message"] and viewer.status["state"] == "live"


def test_optimizer_keyword_refuses_a_non_optimizer():
    model, _, _ = setup()
    with pytest.raises(TypeError, match="nnx.Optimizer"):
        nnx_lab.watch(model, optimizer=optax.adam(1e-3), display=False)
    assert GRAD == "grad"
