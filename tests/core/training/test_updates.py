"""The update ratio ‖θₜ − θₜ₋₁‖ / ‖θₜ₋₁‖ measured from the parameters themselves, across one tick;
donated buffers make it 'unavailable (donated)', never a crash; given updates come first."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from live_helpers import Clock, held_model, slow_step

from nnx_lab.core import compat
from nnx_lab.core.stats import STAT_NAMES
from nnx_lab.core.training import GRAD, UPDATE
from nnx_lab.core.watcher import Watcher

NORM = STAT_NAMES.index("norm")


class Holder(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.arange(12.0).reshape(3, 4) / 10)
        self.b = nnx.Param(jnp.ones(4))
        self.n = nnx.Variable(jnp.zeros((), jnp.int32))  # not floating: no update ratio


def norm(x):
    return float(np.sqrt((np.asarray(x, np.float64) ** 2).sum()))


def step(model, k, donate=False):
    """θ ← θ·(1 − 0.01·k): a known update per step."""
    f = jax.jit(lambda x: x * (1 - 0.01 * k), donate_argnums=0 if donate else ())
    for name in ("w", "b"):
        var = getattr(model, name)
        compat.set_value(var, f(compat.get_value(var)))


def run(model, w, steps, donate=False):
    """Every tick refreshes (and the update program is ready); the parameters after each step."""
    after = {0: {n: np.asarray(compat.get_value(getattr(model, n))) for n in ("w", "b")}}
    for k in range(1, steps + 1):
        step(model, k, donate)
        after[k] = {n: np.asarray(compat.get_value(getattr(model, n))) for n in ("w", "b")} if not donate else None
        w.engine.clock.later()  # (a Watcher made with a Clock)
        w.tick()
        w.wait()
    return after


def wait_for_program(model, w):
    """Run until an update arrives (its program compiles on a thread the first time)."""
    for _ in range(400):
        run(model, w, 1)
        if w.snapshot.series is not None and UPDATE in w.snapshot.series.matrices and not w.snapshot.series.stale:
            return
    raise AssertionError("no update ratio arrived")


def test_update_ratio_equals_numpy_of_the_two_steps():
    model = Holder()
    w = Watcher(model, max_rate=100.0, clock=Clock())
    w.refresh(force=True)
    wait_for_program(model, w)
    start = w.ticks
    after = run(model, w, 3)
    series = w.snapshot.series
    to = series.steps[UPDATE]
    assert UPDATE in series.names and to > start
    k = to - start  # the update from step k-1 to step k of this run
    rows = {p[0]: i for i, p in enumerate(w.snapshot.paths)}
    for name in ("w", "b"):
        i = rows[name]
        old, new = after[k - 1][name], after[k][name]
        assert series.matrices[UPDATE][i, NORM] == pytest.approx(norm(new - old), rel=1e-4)
        assert series.ratio(UPDATE, w.snapshot.stat_matrix[:, NORM])[i] == pytest.approx(
            norm(new - old) / norm(old), rel=1e-4
        )
    assert np.isnan(series.matrices[UPDATE][rows["n"]]).all()  # an integer Variable has none


def test_donated_buffers_make_it_unavailable_with_how_to_get_it():
    model = Holder()
    w = Watcher(model, max_rate=100.0, clock=Clock())
    w.refresh(force=True)
    run(model, w, 3, donate=True)
    message = w.status()["message"]
    assert "update: unavailable (donated)" in message and "viewer.log(updates=" in message
    assert w.state == "live" and w.snapshot["w"].status == "ok"


def test_given_updates_come_first_and_a_cell_refresh_releases_what_is_held():
    model = Holder()
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    w.refresh(force=True)
    given = {"w": jnp.full((3, 4), 0.5), "b": jnp.full(4, 0.5)}
    clock.later()
    w.tick(updates=given)
    w.wait()
    series = w.snapshot.series
    rows = {p[0]: i for i, p in enumerate(w.snapshot.paths)}
    assert series.matrices[UPDATE][rows["w"], NORM] == pytest.approx(norm(np.full((3, 4), 0.5)), rel=1e-5)
    assert w.series.updates.holding  # this tick's parameters, until the next tick
    w.refresh(force=True)  # the end of a loop or cell
    assert not w.series.updates.holding


def test_updates_false_holds_nothing():
    model = Holder()
    clock = Clock()
    w = Watcher(model, max_rate=100.0, updates=False, clock=clock)
    w.refresh(force=True)
    clock.later()
    w.tick()
    assert not w.series.updates.holding and w.series._grads is None
    assert GRAD == "grad"


def test_the_tick_after_a_refresh_launches_the_update_without_waiting_for_the_device():
    model = held_model()
    w = Watcher(model, max_rate=100.0, clock=Clock())
    w.refresh(force=True)
    for _ in range(400):  # until the update program has compiled (on its thread) and run once
        compat.set_value(model.w, compat.get_value(model.w) * 0.99)
        w.engine.clock.later()
        w.tick()
        w.wait()
        if w.snapshot.series is not None and UPDATE in w.snapshot.series.matrices:
            break
    assert w.series.updates.holding
    old = np.asarray(compat.get_value(model.w), np.float64)
    g = compat.get_value(model.w)
    for _ in range(40):
        g = slow_step(g)
    compat.set_value(model.w, g)
    assert not g.is_ready()  # queued
    w.tick()  # no time passed since the last refresh: this tick does not refresh, only the update is launched
    assert not g.is_ready(), "the tick waited for the queued steps"
    assert not w.series.updates.holding
    w.engine.clock.later()
    w.tick()
    w.wait()
    series = w.snapshot.series
    assert series.ratio(UPDATE, w.snapshot.stat_matrix[:, NORM])[0] == pytest.approx(
        norm(np.asarray(g, np.float64) - old) / norm(old), rel=1e-4
    )


def test_a_stacked_variables_layers_get_their_own_update_ratio():
    model = Holder()
    w = Watcher(model, max_rate=100.0, clock=Clock(), layers={"w": 0})  # w (3, 4): three layers of (4,)
    w.refresh(force=True)
    wait_for_program(model, w)
    start = w.ticks
    after = run(model, w, 3)
    series = w.snapshot.series
    k = series.steps[UPDATE] - start
    old, new = after[k - 1]["w"], after[k]["w"]
    paths = [row.path_text for row in w.snapshot.rows]
    parent = paths.index("w")
    assert series.matrices[UPDATE][parent, NORM] == pytest.approx(norm(new - old), rel=1e-4)
    for layer in range(3):
        i = paths.index(f"w[layer {layer}]")
        assert series.matrices[UPDATE][i, NORM] == pytest.approx(norm(new[layer] - old[layer]), rel=1e-4)
        assert series.ratio(UPDATE, w.snapshot.stat_matrix[:, NORM])[i] == pytest.approx(
            norm(new[layer] - old[layer]) / norm(old[layer]), rel=1e-4
        )


def test_only_parameters_are_held_not_batch_statistics_or_optimizer_state():
    import optax

    class WithStats(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones((3, 4)))
            self.mean = nnx.BatchStat(jnp.zeros(4))  # floating, but no learning-rate signal

    model = WithStats()
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    w.refresh(force=True)
    clock.later()
    w.tick()
    rows = {p[0]: i for i, p in enumerate(w.snapshot.paths)}
    assert w.series.updates.holding
    assert w.series.updates._held[1] == [rows["w"]]  # the Param's row alone

    opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    ow = Watcher(opt, max_rate=100.0, clock=Clock())
    ow.refresh(force=True)
    clock.later()
    ow.tick()
    assert not ow.series.updates.holding  # Adam's mu and nu are not held (nor diffed)
    assert ow.state == "live"


def test_a_stale_update_says_how_often_it_is_computed_not_none_since():
    """A tick loop of 40 steps, gradients logged at every one, refreshed every 10th: the cell's end
    refresh has no update ratio of its own; its series line must not say "none since"."""
    from nnx_lab.core.render import series_lines

    model = Holder()
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    w.refresh(force=True)
    wait_for_program(model, w)
    start = w.ticks
    for k in range(1, 41):
        step(model, k)
        if k % 10 == 0:
            clock.later()  # a refresh is due at this tick; the update follows at the next one
        w.tick(grads={"w": jnp.ones((3, 4)), "b": jnp.ones(4)})
        w.wait()
    w.refresh(force=True)  # the end of the cell: no tick, no update of its own
    series = w.snapshot.series
    assert UPDATE in series.stale and series.steps[UPDATE] == start + 31
    line = series_lines(w.snapshot)[0]
    assert f"grad from step {start + 40:,} (none since)" in line  # true: none was logged after the last tick
    assert f"update from step {start + 31:,} (computed at the step after a refresh only, every 10 steps)" in line
    assert series.since[UPDATE] == "computed at the step after a refresh only, every 10 steps"
