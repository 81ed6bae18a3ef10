"""A refresh never waits for the device inside the user's loop: JAX dispatches steps asynchronously,
the statistics kernels queue behind them, and their numbers are published once they have arrived."""

import gc
import threading
import time
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from live_helpers import Clock, held_model, queue_steps, slow_step

from nnx_lab.core import compat
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.watcher import Watcher


@pytest.fixture
def model():
    return held_model()


def test_a_tick_dispatches_behind_queued_steps_and_does_not_wait_for_them(model):
    clock = Clock()
    watcher = Watcher(model, max_rate=100.0, clock=clock)
    watcher.refresh(force=True)  # compiles the statistics kernels
    clock.later()
    last = queue_steps(model, 40)
    assert not last.is_ready()  # the steps are queued
    watcher.tick()  # dispatches a refresh behind them
    assert not last.is_ready(), "the tick waited for the queued steps"
    assert len(watcher.engine.in_flight) == 1 and watcher.refreshes == 1
    watcher.wait()
    assert watcher.refreshes == 2
    want = np.asarray(last, np.float64)
    assert watcher.snapshot["w"].stats["norm"] == pytest.approx(np.sqrt((want**2).sum()), rel=1e-5)


def test_ticks_publish_once_the_numbers_arrive_and_count_only_host_time(model):
    clock = Clock()
    watcher = Watcher(model, max_rate=100.0, clock=clock)
    watcher.refresh(force=True)
    clock.later()
    queue_steps(model, 20)
    start = time.perf_counter()
    watcher.tick()
    while watcher.refreshes == 1:
        clock.now += 0.001
        watcher.tick()  # published by a tick once ready, never by waiting
        time.sleep(0.001)
    waited = time.perf_counter() - start
    assert watcher.cost_s < waited / 2  # the queue's time is the device's, not nnx_lab's cost


def test_donation_after_dispatch_keeps_the_numbers_and_before_it_says_deleted(model):
    watcher = Watcher(model, max_rate=100.0)
    watcher.refresh(force=True)
    before = np.asarray(compat.get_value(model.w), np.float64)
    donate = jax.jit(lambda w: w * 2, donate_argnums=0)
    watcher.refresh(force=True, wait=False)  # dispatched, not published
    old = compat.get_value(model.w)
    compat.set_value(model.w, donate(old))
    assert old.is_deleted()  # the CPU backend honours donation
    watcher.wait()
    row = watcher.snapshot["w"]
    assert row.status == "ok" and row.stats["max"] == pytest.approx(before.max(), rel=1e-6)
    # Donated before a refresh reads it: that refresh says so, and the loop goes on.
    stale = compat.get_value(model.w)
    compat.set_value(model.w, stale)
    donate(stale)
    assert watcher.refresh(force=True) and watcher.snapshot["w"].status == "deleted"


def test_refreshes_ride_a_deep_queue_side_by_side_and_the_newest_arrived_is_shown(model):
    clock = Clock()
    watcher = Watcher(model, max_rate=100.0, clock=clock)
    watcher.refresh(force=True)
    last = None
    for _ in range(3):
        clock.later()
        last = queue_steps(model, 10)
        watcher.tick()  # one more refresh behind each batch of steps, none waited for
    assert not last.is_ready() and len(watcher.engine.in_flight) == 3
    watcher.wait()
    assert watcher.refreshes == 2 and not watcher.engine.in_flight  # the two older ones were not worth showing
    want = np.asarray(last, np.float64)
    assert watcher.snapshot["w"].stats["norm"] == pytest.approx(np.sqrt((want**2).sum()), rel=1e-5)


def test_a_refresh_in_flight_keeps_no_array_alive(model):
    pending = PendingSnapshot(model)
    old = compat.get_value(model.w)
    ref = weakref.ref(old)
    compat.set_value(model.w, old + 1)
    del old
    pending.wait()
    gc.collect()
    assert ref() is None  # only the device held it, until its kernels had run
    assert pending.finish()["w"].status == "ok"


def test_nan_found_after_the_array_was_replaced_is_said_and_counted_otherwise(model):
    w = compat.get_value(model.w).at[0, 0].set(jnp.nan)
    compat.set_value(model.w, w)
    pending = PendingSnapshot(model)
    del w
    compat.set_value(model.w, jnp.zeros((2, 2)))
    gc.collect()
    row = pending.finish()["w"]
    assert row.status == "error" and "replaced before they were counted" in row.note
    compat.set_value(model.w, jnp.array([1.0, jnp.nan, jnp.inf]))
    row = PendingSnapshot(model).finish()["w"]
    assert (row.stats["nan_count"], row.stats["inf_count"], row.stats["max"]) == (1, 1, 1.0)


def test_the_end_of_a_loop_is_published_by_a_thread_without_waiting(model):
    watcher = Watcher(model, max_rate=0.5)
    watcher.refresh(force=True)
    watcher.publish_from_thread = True
    published = threading.Event()
    watcher.subscribe(lambda w: w.refreshes >= 2 and published.set())
    last = None
    for _ in watcher.track(range(30)):
        last = queue_steps(model, 1)
    assert not last.is_ready(), "the end of the loop waited for the device"
    assert published.wait(60)
    want = np.asarray(last, np.float64)
    assert watcher.snapshot["w"].stats["norm"] == pytest.approx(np.sqrt((want**2).sum()), rel=1e-5)


@pytest.mark.needs_flax("nnx.capture")
def test_the_capture_panel_in_a_loop_never_waits_for_the_device():
    import nnx_lab

    class Slow(nnx.Module):
        def __call__(self, w):
            h = slow_step(w)
            self.sow(nnx.Intermediate, "h", h)
            return h

    model = Slow()
    w = jnp.asarray(np.random.default_rng(1).normal(size=(512, 512)).astype(np.float32))
    panel = nnx_lab.capture_panel(model, max_rate=100.0, display=False)
    panel(w)  # compiles; one call is described and shown at once
    outs = []
    for _ in panel.track(range(20)):
        outs.append(panel(w))
        assert not outs[-1].is_ready() or len(outs) == 1, "a call waited for the device"
    panel.last_report  # the loop's last call, described (waited for here, on request)
    want = np.asarray(outs[-1], np.float64)
    assert panel.last_report.snapshot["h[0]"].stats["mean"] == pytest.approx(want.mean(), rel=1e-4, abs=1e-6)


def test_reading_right_after_a_loop_sees_its_end_where_a_thread_publishes(model, monkeypatch):
    import sys

    import nnx_lab

    had_ipykernel = "ipykernel" in sys.modules

    viewer = nnx_lab.watch(model, display=False)
    viewer._watcher.publish_from_thread = True  # as in a kernel that delivers messages from threads
    last = None
    for _ in viewer.track(range(5)):
        last = queue_steps(model, 1)
    want = np.asarray(last, np.float64)
    assert viewer.last_snapshot["w"].stats["norm"] == pytest.approx(np.sqrt((want**2).sum()), rel=1e-5)
    if not compat.has("nnx.capture"):
        return

    class Sower(nnx.Module):
        def __call__(self, w):
            self.sow(nnx.Intermediate, "h", w)
            return w

    # The panel's descriptions publish from a thread where ipykernel >= 6 (not Colab) delivers its
    # messages: ipykernel (7.x here, 6.17 on Colab's stack) imported for this test only.
    ipykernel = pytest.importorskip("ipykernel")
    if not had_ipykernel:
        del sys.modules["ipykernel"]
    monkeypatch.setitem(sys.modules, "ipykernel", ipykernel)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    sower = Sower()  # held: the panel holds it weakly
    panel = nnx_lab.capture_panel(sower, display=False)
    for step in panel.track(range(30)):
        panel(jnp.full((2,), float(step)))
    assert panel.status["calls"] == 30  # at once, while the last report may still be on its way
    assert panel.last_report.snapshot["h[0]"].stats["mean"] == 29.0
