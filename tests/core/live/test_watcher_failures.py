"""Failures are visible (issue 26): a refresh that fails is a status and a log line, said once; a
broken display is logged and the loop goes on; the engine's clock is injectable."""

import logging

import jax.numpy as jnp
from flax import nnx

from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.watcher import Watcher


def model():
    return nnx.Linear(3, 2, rngs=nnx.Rngs(0))


def warnings_of(caplog):
    return [r for r in caplog.records if r.name == "nnx_lab" and r.levelno >= logging.WARNING]


def test_a_failing_refresh_is_a_status_and_one_log_line(monkeypatch, caplog):
    m = model()
    w = Watcher(m)
    assert w.refresh(force=True) and w.state == "live"

    def broken(self, *args, **kwargs):
        raise RuntimeError("Array has been deleted\nwith more detail")

    monkeypatch.setattr(PendingSnapshot, "__init__", broken)  # every refresh's snapshot fails to start
    with caplog.at_level(logging.DEBUG, logger="nnx_lab"):
        assert w.refresh(force=True) is False
        assert w.refresh(force=True) is False  # the same failure again: not logged again
    assert w.state == "error" and w.message == "RuntimeError: Array has been deleted"
    [record] = warnings_of(caplog)
    assert "a refresh failed: RuntimeError: Array has been deleted" in record.getMessage()
    assert record.exc_info is not None  # the traceback is in the log, not on screen
    monkeypatch.undo()
    assert w.refresh(force=True) and w.state == "live" and w.refreshes == 2


def test_a_broken_display_is_logged_and_the_refresh_still_counts(caplog):
    m = model()
    w = Watcher(m)
    shown = []
    w.subscribe(lambda watcher: 1 / 0)
    w.subscribe(lambda watcher: shown.append(watcher.refreshes))
    with caplog.at_level(logging.DEBUG, logger="nnx_lab"):
        assert w.refresh(force=True) and w.refresh(force=True)
    assert shown == [1, 2]  # the listener after the broken one still hears every refresh
    [record] = warnings_of(caplog)  # once, however often it breaks
    assert "a viewer failed to show a refresh: ZeroDivisionError" in record.getMessage()


def test_a_broken_between_steps_hook_does_not_stop_the_loop(caplog):
    m = model()

    def hook():
        raise ValueError("a queued click went wrong")

    w = Watcher(m, between_steps=hook)
    with caplog.at_level(logging.WARNING, logger="nnx_lab"):
        for _ in range(3):
            w.tick()
    assert w.ticks == 3
    assert any("queued changes failed" in r.getMessage() for r in warnings_of(caplog))


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_throttle_runs_on_an_injected_clock():
    m = nnx.Linear(3, 2, use_bias=False, rngs=nnx.Rngs(0))  # one array: no program to compile first
    clock = Clock()
    w = Watcher(m, max_rate=1.0, clock=clock)
    assert w.refresh(force=True)
    m.kernel[...] = m.kernel[...] + 1
    assert not w.engine.due() and w.tick() is False and w.refreshes == 1  # no time has passed
    clock.now += w.interval
    assert w.engine.due()
    w.tick()
    w.wait()
    assert w.refreshes == 2
    assert float(w.snapshot["kernel"].stats["mean"]) == float(jnp.mean(m.kernel[...]))
