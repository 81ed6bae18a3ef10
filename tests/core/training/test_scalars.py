"""Scalars logged in the loop (viewer.tick(loss=...), log(...)) and the NaN/Inf alert: never synced in a
tick, read with the statistics, bounded, bad input a status; the alert's step, path and persistence.

Reaches inside ``nnx_lab.core.training._scalars`` (why this file may): whether a device value was
computed when the store read it is seen only where the store reads it (``_host_values``), and its
bound on waiting values (``MAX_PENDING``, 4,096) is lowered to be reached in a short loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from live_helpers import held_model, slow_step
from unchanged import assert_unchanged, frozen

from nnx_lab.core import compat
from nnx_lab.core.snapshot import snapshot
from nnx_lab.core.training import ScalarStore, _scalars
from nnx_lab.core.watcher import Watcher


@jax.jit
def loss_of(w):
    return jnp.mean(w**2)


@pytest.fixture
def model():
    m = held_model()
    jax.block_until_ready(loss_of(slow_step(compat.get_value(m.w))))  # compiled
    return m


@pytest.fixture
def reads(monkeypatch):
    """Whether each device value read to the host (the one place ScalarStore reads one) had been
    computed already: a read of one that had not would wait for the device."""
    calls = []
    real = _scalars._host_values

    def counted(xs):
        calls.extend(x.is_ready() for x in xs)
        return real(xs)

    monkeypatch.setattr(_scalars, "_host_values", counted)
    return calls


def test_a_tick_with_scalars_never_waits_for_them(model, reads):
    watcher = Watcher(model, max_rate=100.0)
    watcher.refresh(force=True)
    w, losses = compat.get_value(model.w), []
    for _ in range(30):
        w = slow_step(w)
        compat.set_value(model.w, w)
        losses.append(loss_of(w))
        watcher.tick(loss=losses[-1], lr=1e-3)
    assert not losses[-1].is_ready(), "a tick waited for the device"
    assert all(reads), "a tick read a value not yet computed"  # refreshes published on the way read only arrived ones
    watcher.wait()
    # the refresh after the cell (cell_hooks): a loaded machine may throttle every refresh after the first ticks
    watcher.refresh(force=True, wait=True)
    assert watcher.scalars.names == ["loss", "lr"]
    steps, values = watcher.scalars.series("loss")
    assert steps.tolist() == list(range(1, 31))
    assert values == pytest.approx([float(x) for x in losses], rel=1e-6)
    assert watcher.scalars.latest("lr") == (30, 1e-3)
    assert watcher.scalars._pending["loss"] == []  # no device scalar held once read


def test_log_records_for_the_step_the_next_tick_ends_the_latest_value_wins():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    watcher.refresh(force=True)
    for step in watcher.track(range(5)):
        watcher.log(loss=jnp.float32(step))
        watcher.log(loss=jnp.float32(10 * step), acc=np.float32(0.5))  # same step: replaces
    watcher.wait()
    steps, values = watcher.scalars.series("loss")
    assert steps.tolist() == [1, 2, 3, 4, 5] and values.tolist() == [0, 10, 20, 30, 40]
    assert watcher.scalars.latest("acc") == (5, 0.5)
    watcher.tick(loss=7)  # tick(**scalars) = log + tick
    watcher.wait()
    watcher.refresh(force=True)
    assert watcher.ticks == 6 and watcher.scalars.latest("loss") == (6, 7.0)


@pytest.mark.parametrize(
    "value, problem",
    [
        (jnp.ones(3), "loss: not a scalar (shape (3,)); not recorded"),
        (np.zeros((2, 2)), "loss: not a scalar (shape (2, 2)); not recorded"),
        ("0.5", "loss: not a number (str); not recorded"),
        (jnp.complex64(1j), "loss: not a real number (dtype complex64); not recorded"),
        ([1.0], "loss: not a number (list); not recorded"),
        (10**400, "loss: not a float (OverflowError); not recorded"),
    ],
)
def test_bad_scalars_are_a_status_never_an_exception(value, problem):
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    before = frozen(model)
    watcher = Watcher(model)
    watcher.refresh(force=True)
    watcher.tick(loss=value, lr=0.1)  # never raises: the bad value is a status
    watcher.refresh(force=True)
    assert watcher.status()["message"] == problem
    assert watcher.state == "live" and watcher.scalars.names == ["lr"]
    assert_unchanged(model, before)
    # Shown once: a good value for that name clears it.
    watcher.tick(loss=1.0)
    watcher.refresh(force=True)
    assert watcher.status()["message"] == "" and watcher.scalars.latest("loss") == (2, 1.0)


def test_a_scalar_inside_jit_is_a_status():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    watcher = Watcher(model)

    @jax.jit
    def step(x):
        loss = jnp.sum(x)
        watcher.log(loss=loss)
        return loss

    step(jnp.ones(2))
    watcher.refresh(force=True)
    assert watcher.status()["message"] == "loss: a traced value (logged inside jit/grad?); not recorded"


def test_a_scalar_deleted_before_it_was_read_is_a_status():
    store = ScalarStore()
    x = jnp.float32(2.0) + 1
    store.log(1, {"loss": x})
    x.delete()  # donated by the next step, say
    store.log(2, {"loss": jnp.float32(5.0)})
    assert store.collect(wait=True)
    assert store.latest("loss") == (2, 5.0)
    assert store.problem == "loss: step 1: ValueError: deleted (donated?) before it was read; not recorded"
    store.log(3, {"loss": x})
    assert store.problem.startswith("loss: a deleted (donated) array")


def test_too_many_names_are_refused():
    store = ScalarStore()
    store.log(1, {f"s{i}": i for i in range(_scalars.MAX_NAMES + 2)})
    store.collect()
    assert len(store.names) == _scalars.MAX_NAMES
    assert store.problem.startswith(f"s{_scalars.MAX_NAMES}: more than {_scalars.MAX_NAMES} scalars")


def test_the_curve_is_bounded_and_evenly_spread_and_keeps_the_latest():
    store = ScalarStore(points=8)
    for step in range(1, 101):
        store.log(step, {"loss": float(step) if step != 37 else float("nan")})
        if step % 10 == 0:
            store.collect()
    steps, values = store.series("loss")
    assert len(steps) <= 9 and steps[-1] == 100 and values[-1] == 100.0
    gaps = np.diff(steps[:-1])
    assert (gaps == gaps[0]).all() and gaps[0] == 16, steps  # a point every 16 steps
    assert 37 not in steps.tolist()
    assert store.take_nonfinite()[:2] == (37, "loss")  # seen before it was thinned away
    assert store.take_nonfinite() is None


def test_device_scalars_waiting_to_be_read_are_bounded(monkeypatch, model, reads):
    monkeypatch.setattr(_scalars, "MAX_PENDING", 16)
    store = ScalarStore()
    w = compat.get_value(model.w)
    for step in range(1, 60):
        w = slow_step(w)
        store.log(step, {"loss": loss_of(w)})
        assert len(store._pending["loss"]) < 16
    assert all(reads)  # log() read only values already computed
    store.collect(wait=True)
    steps, _ = store.series("loss")
    assert steps[-1] == 59 and len(steps) >= 59 // 4


def test_nan_alert_names_the_step_and_path_and_stays_until_cleared():
    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Linear(3, 1, rngs=nnx.Rngs(0)))
    watcher = Watcher(model)
    watcher.refresh(force=True)
    assert watcher.alert.to_dict() == {}
    kernel = model.layers[1].kernel
    good = compat.get_value(kernel)
    for step in range(1, 21):
        watcher.tick()
        if step == 7:
            compat.set_value(kernel, good.at[0, 0].set(jnp.inf))
            watcher.refresh(force=True)  # seen after 7 ticks
        if step == 12:
            compat.set_value(kernel, good)
            watcher.refresh(force=True)
    watcher.refresh(force=True)
    alert = watcher.alert.to_dict()
    assert {k: alert[k] for k in ("step", "where", "source", "nan", "inf", "now_variables")} == {
        "step": 7,
        "where": "layers[1].kernel",
        "source": "variable",
        "nan": 0,
        "inf": 1,
        "now_variables": 0,
    }
    assert watcher.alert.text() == f"first Inf at step 7 (refresh {alert['refresh']}) in layers[1].kernel; now clean"
    assert alert["head"] + alert["where"] + alert["tail"] == watcher.alert.text()  # the browser's sentence is this one
    watcher.clear_alert()
    assert watcher.alert.to_dict() == {}
    watcher.refresh(force=True)
    assert watcher.alert.to_dict() == {}  # clean: nothing to say
    compat.set_value(model.layers[0].bias, jnp.array([jnp.nan, 0.0, 0.0]))
    watcher.refresh(force=True)
    assert watcher.alert.to_dict()["where"] == "layers[0].bias" and watcher.alert.to_dict()["step"] == 20


def test_a_nan_loss_comes_before_the_parameters_it_spoiled():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    watcher.refresh(force=True)
    for step in range(1, 11):
        loss = jnp.float32(1.0 / step)
        if step >= 4:
            loss = loss * jnp.nan
            compat.set_value(model.bias, jnp.full(2, jnp.nan))
        watcher.tick(loss=loss)
    watcher.refresh(force=True)
    alert = watcher.alert.to_dict()
    assert (alert["step"], alert["where"], alert["source"], alert["nan"]) == (4, "loss", "scalar", 1)
    assert alert["now_variables"] == 1 and alert["now_scalars"] == ["loss"]
    assert watcher.alert.text().endswith("in loss; now in 1 variable, loss")


def test_the_alert_takes_whatever_rows_the_snapshot_has():
    """Rows of any kind (here a plain dict standing for gradients or optimizer state) are named by path."""
    from nnx_lab.core.training import NonfiniteAlert

    alert = NonfiniteAlert()
    grads = {"grads": {"blocks": [{"w": jnp.zeros(2)}, {"w": jnp.array([1.0, jnp.nan])}]}}
    assert alert.observe(snapshot(grads), refresh=5, step=123)
    assert alert.to_dict()["where"] == "grads.blocks[1].w"
    assert alert.text() == "first NaN at step 123 (refresh 5) in grads.blocks[1].w; now in 1 variable"


def test_a_nan_seen_before_any_tick_names_the_refresh_only():
    from nnx_lab.core.training import NonfiniteAlert

    alert = NonfiniteAlert()
    alert.observe(snapshot({"w": jnp.array([jnp.inf, 1.0])}), refresh=1234, step=0)
    assert alert.text() == "first Inf at refresh 1,234 in w; now in 1 variable"


def test_a_nan_made_outside_the_loop_is_not_blamed_on_its_last_step():
    """Tutorial 06: a loop of 30 steps ends clean; another cell (another viewer's loop) then spoils the
    same model. This viewer's next refresh, still after step 30, must not say "at step 30"."""
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    for _ in watcher.track(range(30)):
        pass  # its end refresh, after step 30, sees every value finite
    assert watcher.alert.to_dict() == {} and watcher.ticks == 30
    compat.set_value(model.bias, jnp.full(2, jnp.nan))  # another cell's training
    watcher.refresh(force=True)  # that cell's end
    refresh = watcher.refreshes
    assert watcher.alert.text() == (
        f"first NaN seen at refresh {refresh:,}, after step 30, in bias; "
        "the values changed outside this viewer's loop; now in 1 variable"
    )
    alert = watcher.alert.to_dict()
    assert alert["head"] + alert["where"] + alert["tail"] == watcher.alert.text()


def test_a_nan_made_inside_the_loop_still_names_its_step():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    watcher.refresh(force=True)
    for step in range(1, 6):
        if step == 5:
            compat.set_value(model.bias, jnp.full(2, jnp.nan))
        watcher.tick()
    watcher.refresh(force=True)
    assert watcher.alert.text().startswith("first NaN at step 5 (refresh ")
