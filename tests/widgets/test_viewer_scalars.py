"""The viewer's header curves and NaN/Inf banner from Python: the "scalars" message, the alert trait,
the browser's requests (scalars, clear_alert)."""

import jax.numpy as jnp
import numpy as np
from flax import nnx

import nnx_lab
from nnx_lab.core import compat


def recording(viewer):
    sent = []
    viewer.send = lambda msg, buffers=None: sent.append((msg, buffers))
    return sent


def decode(message):
    msg, (steps, values) = message
    steps, values = np.frombuffer(steps, np.float64), np.frombuffer(values, np.float64)
    out, at = {}, 0
    for name, n in zip(msg["names"], msg["counts"]):
        out[name] = (steps[at : at + n].tolist(), values[at : at + n].tolist())
        at += n
    return out


def test_scalars_logged_in_track_reach_the_browser_as_two_float64_buffers():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    sent = recording(viewer)
    for step in viewer.track(range(6)):
        viewer.log(loss=jnp.float32(1.0 / (step + 1)), lr=0.123456)
    viewer.watcher.wait()
    scalars = [m for m in sent if m[0]["type"] == "scalars"]
    assert scalars, "no scalars message after the loop"
    curves = decode(scalars[-1])
    assert list(curves) == ["loss", "lr"]
    assert curves["loss"][0] == [1, 2, 3, 4, 5, 6]
    assert curves["loss"][1] == [1.0, 0.5, 0.3333, 0.25, 0.2, 0.1667]  # rounded as the statistics are
    assert curves["lr"][1][-1] == 0.1235
    # The browser asks after display (Colab keeps no buffers of the initial state): the same curves.
    viewer._on_message(viewer, {"type": "scalars"}, [])
    assert decode(sent[-1]) == curves
    # Nothing new read: a refresh sends no scalars message again.
    n = len(sent)
    viewer.refresh()
    assert not [m for m in sent[n:] if m[0]["type"] == "scalars"]


def test_tick_with_scalars_and_a_bad_one_in_the_status():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    viewer.tick(loss=jnp.ones(4), lr=0.5)
    viewer.refresh()
    assert viewer.status["state"] == "live"
    assert viewer.status["message"] == "loss: not a scalar (shape (4,)); not recorded"
    assert viewer.watcher.scalars.latest("lr") == (1, 0.5)


def test_the_alert_trait_names_the_first_step_and_survives_clean_refreshes_until_cleared():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    sent = recording(viewer)
    assert viewer.alert == {}
    for step in viewer.track(range(50)):
        if step == 14:
            compat.set_value(model.bias, jnp.array([0.0, jnp.nan, 0.0]))
            viewer.refresh()  # seen after 14 ticks
        if step == 20:
            compat.set_value(model.bias, jnp.zeros(3))
    viewer.watcher.wait()
    assert viewer.watcher.refreshes >= 3
    assert {k: viewer.alert[k] for k in ("step", "where", "source", "nan", "now_variables")} == {
        "step": 14,
        "where": "bias",
        "source": "variable",
        "nan": 1,
        "now_variables": 0,
    }
    # The NaN came in a statistics-only refresh (the rows were sent once, before it): the alert reads the columns.
    assert viewer.snapshot["refresh"] < viewer.alert["refresh"]
    assert [m for m, _ in sent if m["type"] == "stats" and m["refresh"] == viewer.alert["refresh"]]
    viewer._on_message(viewer, {"type": "clear_alert"}, [])  # the banner's clear button
    assert viewer.alert == {}
    viewer.refresh()
    assert viewer.alert == {}


def test_a_nan_loss_sets_the_alert_with_its_step():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    for step in viewer.track(range(10)):
        viewer.log(loss=jnp.float32(jnp.nan if step == 6 else 1.0))  # the 7th step's loss is NaN
    viewer.watcher.wait()
    assert (viewer.alert["step"], viewer.alert["where"], viewer.alert["source"]) == (7, "loss", "scalar")
    assert viewer.alert["now_scalars"] == []
    viewer.clear_alert()
    assert viewer.alert == {}
