"""The throttle budgets the device's time for a refresh as well as the host's: a refresh whose
statistics take the device 20 ms, at a 2 % budget, runs at most once a second, whatever its host
cost. The device time is measured where nothing was queued before the refresh (its inputs were
computed when it was launched) and its results were waited for."""

import time

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


def test_a_wait_after_later_steps_measures_nothing_and_the_rate_charges_it():
    """A loop's refresh is waited for at the loop's end, behind the steps queued after it: that time
    is not its own. It is charged by the bytes it read at the rate a quiet refresh measured."""
    from live_helpers import Clock, held_model, queue_steps

    clock = Clock()
    model = held_model(256)
    w = Watcher(model, budget=0.02, clock=clock)
    for _ in range(3):  # the first refreshes compile (one-offs); a quiet one then measures the rate
        w.refresh(force=True)
    assert w.source.device_s_per_byte > 0 and w.device_s is not None

    start = time.perf_counter()
    jax.block_until_ready(queue_steps(model, 3))
    steps_s = time.perf_counter() - start
    clock.later()
    w.tick()  # dispatched with its inputs computed: the device starts on it at once
    queue_steps(model, 3)
    w.tick()
    w.wait()  # waits for the steps queued after it too
    assert w.device_s < steps_s / 2  # their time is not the refresh's (it may have been measured in the tick)
    charged = w.cost_s + w.source.device_s_per_byte * 256 * 256 * 4
    assert w.interval == pytest.approx(max(1 / w.max_rate, charged / w.budget))


def test_the_first_refresh_of_a_layout_is_a_one_off_not_charged():
    """The first refresh of a structure learns its launch plan (per-array kernels, compiles): like a
    compile, its cost says nothing of the next, and a loop's viewer is not throttled for it."""
    from nnx_lab.core.stats import compiling, kernel_cache_size

    earlier = nnx.Linear(64, 64, rngs=nnx.Rngs(0))
    first = Watcher(earlier)
    for _ in range(3):  # what this structure needs is compiled: nothing compiles below
        first.refresh(force=True)
    first.engine.wait()
    deadline = time.monotonic() + 60
    while compiling() and time.monotonic() < deadline:  # its program compiles on a thread: let it end
        time.sleep(0.01)
    assert first.refreshes == 3 and not compiling()
    model = nnx.Linear(64, 64, rngs=nnx.Rngs(1))
    w = Watcher(model, budget=1e-5)  # any charged refresh: an interval of seconds
    compiled = kernel_cache_size()
    w.refresh(force=True)
    assert w.refreshes == 1 and kernel_cache_size() == compiled
    assert w.interval == 1 / w.max_rate
    for _ in range(4):
        w.refresh(force=True)
    assert w.refreshes == 5 and w.interval > 1 / w.max_rate  # a repeated refresh is charged


def test_one_offs_that_keep_coming_are_charged():
    """A structure that changes at every refresh makes every refresh a first one: after a few in a
    row, they are the steady cost and the throttle counts them."""
    from nnx_lab.core.compat import set_value
    from nnx_lab.core.live import ONE_OFFS

    model = nnx.Linear(8, 8, rngs=nnx.Rngs(0))
    w = Watcher(model, budget=1e-5)
    for k in range(2 * ONE_OFFS + 4):  # (the first two compile their kernels: not charged either way)
        set_value(model.bias, jnp.zeros(8 + k % 2))  # the other shape: another structure, a first refresh
        w.refresh(force=True)
    assert w.refreshes == 2 * ONE_OFFS + 4 and w.interval > 1 / w.max_rate
