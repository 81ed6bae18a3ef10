"""The throttle budgets the device's time for a refresh as well as the host's: a refresh whose
statistics take the device 20 ms, at a 2 % budget, runs at most once a second, whatever its host
cost. The device time is measured where nothing was queued before the refresh (its inputs were
computed when it was launched) and its results were waited for."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_lab.core.watcher import Watcher


def test_a_waited_refresh_measures_the_device_and_the_interval_counts_it():
    model = nnx.Linear(512, 512, rngs=nnx.Rngs(0))
    jax.block_until_ready(nnx.state(model))
    w = Watcher(model, budget=0.02)
    for _ in range(3):  # the first refreshes compile; then a measured one that compiled nothing
        w.refresh(force=True)
    assert w.device_s is not None and w.device_s > 0
    assert w.interval == pytest.approx(max(1 / w.max_rate, (w.cost_s + w.device_s) / w.budget))
    assert w.status()["device_ms"] == round(w.device_s * 1e3, 2)


def test_inputs_still_computing_are_not_a_measurement():
    model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
    w = Watcher(model)
    w.refresh(force=True)
    w.device_s = None
    big = jnp.ones((1500, 1500))
    for _ in range(6):  # queued work whose result is the model's new kernel
        big = jnp.tanh(big @ big)
    from nnx_lab.core.compat import set_value

    set_value(model.kernel, big[:4, :4])
    if not model.kernel[...].is_ready():  # (a fast machine may have finished already)
        w.refresh(force=True)
        assert w.device_s is None
