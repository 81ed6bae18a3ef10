"""A cell's end (and the background thread) skips a refresh when the model holds the very arrays
the last refresh reduced: a cell that only defines a function costs a flatten, nothing on the
device. Anything that changes what a refresh shows (an array, the structure, logged gradients or
scalars) still refreshes. And a loop's last refresh with gradients, dropped unpublished because a
later one arrived with it, still gives the gradient column its step."""

import time

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from live_helpers import Clock

from nnx_lab.core.compat import get_value, set_value
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.stats import STAT_NAMES, compiling
from nnx_lab.core.training import GRAD
from nnx_lab.core.watcher import Watcher

MAX = STAT_NAMES.index("max")


def linear():
    return nnx.Linear(3, 2, rngs=nnx.Rngs(0))


def test_same_arrays_skip_and_publish_nothing():
    model = linear()
    w = Watcher(model)
    assert w.refresh(force=True)
    before = w.snapshot
    assert w.refresh(force=True, skip_unchanged=True) is False
    assert w.refreshes == 1 and w.snapshot is before and w.state == "live"
    # without the flag a forced refresh still runs (an explicit viewer.refresh())
    assert w.refresh(force=True) and w.refreshes == 2


def test_a_new_array_refreshes_and_shows_it():
    model = linear()
    w = Watcher(model)
    w.refresh(force=True)
    set_value(model.kernel, jnp.full((3, 2), 7.0))
    assert w.refresh(force=True, skip_unchanged=True)
    row = next(r for r in w.snapshot.rows if r.path[-1] == "kernel")
    assert row.stats["max"] == 7.0


def test_a_new_variable_with_old_arrays_refreshes():
    model = linear()
    w = Watcher(model)
    w.refresh(force=True)
    model.twin = nnx.Param(get_value(model.bias))  # no new array, a new row
    assert w.refresh(force=True, skip_unchanged=True)
    assert any(r.path[-1] == "twin" for r in w.snapshot.rows)


def test_logged_gradients_and_scalars_refresh():
    model = linear()
    w = Watcher(model)
    w.refresh(force=True)
    w.log(grads=nnx.state(model, nnx.Param))
    assert w.refresh(force=True, skip_unchanged=True)
    assert GRAD in w.snapshot.series.names
    w.log(loss=jnp.float32(1.5))
    assert w.refresh(force=True, skip_unchanged=True)
    assert w.scalars.latest("loss")[1] == 1.5


def test_an_error_state_is_never_skipped():
    model = linear()
    w = Watcher(model)
    w.refresh(force=True)
    w.state, w.message = "error", "something went wrong"
    assert w.refresh(force=True, skip_unchanged=True)
    assert w.state == "live" and w.message == ""


def test_a_dropped_refresh_keeps_its_gradients(monkeypatch):
    """A manual tick() loop: the last tick's refresh (with that step's gradients) has not arrived
    when the cell's end refresh (no gradients) is dispatched and waited for: both arrive together,
    the newest is published, and it shows the last step's gradients, not an earlier step's."""
    model = linear()
    opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    w = Watcher(model, optimizer=opt, updates=False, clock=Clock())
    for step in range(1, 4):  # compiles the program that reduces the gradients with the rest
        grads = jax_grads(model, step)
        opt.update(model, grads)
        w.log(grads=grads)
        w.refresh(force=True)
        deadline = time.monotonic() + 120
        while compiling() and time.monotonic() < deadline:
            time.sleep(0.05)
    w.log(grads=jax_grads(model, 3))
    due(w)
    w.tick()
    w.wait()  # the ordinary path: arrived, published
    assert w.snapshot.series.steps[GRAD] == w.ticks == 1 and GRAD not in w.snapshot.series.stale
    # now the device is "busy": nothing a tick dispatches is ready until waited for
    monkeypatch.setattr(PendingSnapshot, "ready", lambda self: False)
    grads = jax_grads(model, 4)
    opt.update(model, grads)
    w.log(grads=grads)
    due(w)
    w.tick()  # dispatched with step 2's gradients, not published
    assert w.snapshot.series.steps[GRAD] == 1
    w.refresh(force=True, wait=True)  # the cell's end: no gradients of its own
    grad_rows = w.snapshot.series.matrices[GRAD]
    assert w.snapshot.series.steps[GRAD] == w.ticks == 2
    kernel = next(i for i, r in enumerate(w.snapshot.rows) if r.path[-1] == "kernel")
    assert grad_rows[kernel, MAX] == pytest.approx(float(np.max(get_value(grads["kernel"]))))


def test_a_manual_loops_last_gradients_reach_the_cells_end_refresh():
    """A tick() loop whose last tick was throttled: the cell's end refresh shows the last step's
    gradients (kept by reference after that tick), not those of the loop's last refresh."""
    model = linear()
    opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    w = Watcher(model, optimizer=opt, updates=False, max_rate=0.01)  # at most one refresh a 100 s
    for step in range(1, 6):
        grads = jax_grads(model, step)
        opt.update(model, grads)
        w.log(grads=grads)
        w.tick()  # the first refreshes, the rest are throttled
    w.refresh(force=True, wait=True)  # the cell's end
    assert w.snapshot.series.steps[GRAD] == w.ticks == w.snapshot_step == 5
    kernel = next(i for i, r in enumerate(w.snapshot.rows) if r.path[-1] == "kernel")
    assert w.snapshot.series.matrices[GRAD][kernel, MAX] == 5.0


def due(w):
    """The next tick refreshes (``w`` made with a live_helpers.Clock: time moves on)."""
    w.engine.clock.later()


def jax_grads(model, step):
    state = nnx.state(model, nnx.Param)
    return jax_tree_full(state, float(step))


def jax_tree_full(state, value):
    import jax

    return jax.tree.map(lambda a: jnp.full(a.shape, value, a.dtype), state)
