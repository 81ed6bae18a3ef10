"""A Watcher that follows a name (functional loops rebind their model) or watches an nnx.split pair."""

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.live import NameTarget
from nnx_lab.core.stats import STAT_NAMES
from nnx_lab.core.watcher import Watcher

MEAN, NORM, MAX = (STAT_NAMES.index(s) for s in ("mean", "norm", "max"))


def mlp(seed=0):
    return nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(seed)), nnx.BatchNorm(4, rngs=nnx.Rngs(seed)))


def expected(model, snap):
    """numpy's mean/norm/max of every row's array in ``model`` now, in the snapshot's row order."""
    state = nnx.state(model)
    flat = {tuple(path): np.asarray(var[...]) for path, var in nnx.to_flat_state(state)}
    arrays = [flat[row.path].astype(np.float64) for row in snap.rows]
    return np.array([[a.mean(), np.sqrt((a**2).sum()), a.max()] for a in arrays])


def assert_current(watcher, model):
    snap = watcher.snapshot
    got = snap.stat_matrix[:, [MEAN, NORM, MAX]]
    np.testing.assert_allclose(got, expected(model, snap), rtol=1e-5, atol=1e-6)


def test_follows_a_model_rebound_by_nnx_merge_each_step():
    ns = {"model": mlp()}
    graphdef, state = nnx.split(ns["model"])
    watcher = Watcher(NameTarget("model", ns), max_rate=100)
    watcher.refresh(force=True)
    counts = [watcher.refreshes]
    for step in range(4):
        state = jax.tree.map(lambda x: x * 1.5 + step, state)  # noqa: B023 - called at once
        ns["model"] = nnx.merge(graphdef, state)  # a new model object each step
        watcher.refresh(force=True)
        assert watcher.state == "live", watcher.status()
        assert_current(watcher, ns["model"])
        counts.append(watcher.refreshes)
    assert counts == sorted(set(counts)), "every step's refresh was published"
    assert watcher.status()["message"] == "following `model`"
    assert watcher._structure.walks == 1, "the same structure is reused across rebound models"


def train_step_fn(graphdef):
    tx = optax.sgd(0.1)

    @jax.jit
    def train_step(state, opt_state, x, y):
        def loss(params):
            model = nnx.merge(graphdef, params)
            return ((model(x) - y) ** 2).mean()

        grads = jax.grad(loss)(state)
        updates, opt_state = tx.update(grads, opt_state, state)
        return optax.apply_updates(state, updates), opt_state

    return tx, train_step


def test_follows_a_jitted_train_step_returning_a_new_model_through_track():
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    tx, train_step = train_step_fn(graphdef)
    opt_state = tx.init(state)
    ns = {"model": model}
    del model
    x, y = jnp.ones((8, 3)), jnp.zeros((8, 2))
    watcher = Watcher(NameTarget("model", ns), max_rate=100)
    watcher.refresh(force=True)
    start = watcher.refreshes
    for _ in watcher.track(range(5)):
        state, opt_state = train_step(state, opt_state, x, y)
        ns["model"] = nnx.merge(graphdef, state)
    watcher.wait()
    assert watcher.state == "live"
    assert watcher.refreshes > start
    assert_current(watcher, ns["model"])
    first = nnx.split(nnx.Linear(3, 2, rngs=nnx.Rngs(0)))[1]
    assert not np.allclose(np.asarray(first["kernel"][...]), np.asarray(ns["model"].kernel[...])), "it trained"


def test_follows_model_opt_state_returned_by_a_jitted_step():
    # `model, opt_state = train_step(model, opt_state, batch)`: jax.jit with the merge inside.
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    graphdef, _ = nnx.split(model)
    tx, step_state = train_step_fn(graphdef)

    def train_step(model, opt_state, x, y):
        state, opt_state = step_state(nnx.state(model), opt_state, x, y)
        return nnx.merge(graphdef, state), opt_state

    ns = {"model": model}
    opt_state = tx.init(nnx.state(model))
    del model
    watcher = Watcher(NameTarget("model", ns), max_rate=100)
    watcher.refresh(force=True)
    for _ in range(3):
        ns["model"], opt_state = train_step(ns["model"], opt_state, jnp.ones((4, 3)), jnp.ones((4, 2)))
        watcher.refresh(force=True)
        assert_current(watcher, ns["model"])
    assert watcher.refreshes == 4


def test_missing_name_and_non_model_are_a_status_then_it_recovers():
    ns = {"model": mlp()}
    watcher = Watcher(NameTarget("model", ns))
    watcher.refresh(force=True)
    seen = []
    watcher.subscribe(lambda w: seen.append(w.state))
    ns["model"] = "not a model"
    assert watcher.refresh(force=True) is False
    assert watcher.status()["state"] == "missing"
    assert watcher.status()["message"] == "following `model`; `model` is a str, not a model"
    del ns["model"]
    watcher.refresh(force=True)
    assert watcher.status()["message"] == "following `model`; `model` is not defined"
    watcher.refresh(force=True)  # still missing: said once, not at every tick
    assert seen == ["missing", "missing"]
    ns["model"] = model = mlp(seed=3)
    assert watcher.refresh(force=True) is True
    assert watcher.state == "live" and watcher.status()["message"] == "following `model`"
    assert_current(watcher, model)


def test_a_rebound_model_of_another_structure_shows_its_rows():
    ns = {"model": mlp()}
    watcher = Watcher(NameTarget("model", ns))
    watcher.refresh(force=True)
    structure = watcher.history.structure
    assert [r.path_text for r in watcher.snapshot.rows][:2] == ["layers[0].bias", "layers[0].kernel"]
    ns["model"] = nnx.Linear(5, 7, rngs=nnx.Rngs(0))
    watcher.refresh(force=True)
    assert watcher.snapshot.root_type == "Linear"
    assert [(r.path_text, r.shape) for r in watcher.snapshot.rows] == [("bias", (7,)), ("kernel", (5, 7))]
    assert watcher.history.structure == structure + 1  # the sparklines start again
    assert_current(watcher, ns["model"])
    fresh = nnx_lab.snapshot(ns["model"])
    assert [r.path for r in fresh.rows] == [r.path for r in watcher.snapshot.rows]


def test_dotted_names_and_what_they_say_when_missing():
    class Trainer:
        pass

    trainer = Trainer()
    ns = {"trainer": trainer}
    target = NameTarget("trainer.model", ns)
    assert target.resolve() is None and target.problem == "`trainer` has no attribute `model`"
    trainer.model = mlp()
    assert target.resolve() is trainer.model
    target = NameTarget("nobody.model", ns)
    assert target.resolve() is None and target.problem == "`nobody` is not defined"


class Raising:
    @property
    def model(self):
        raise RuntimeError("boom")


def test_a_property_that_raises_is_a_status():
    watcher = Watcher(NameTarget("t.model", {"t": Raising()}))
    assert watcher.refresh(force=True) is False
    assert watcher.status()["state"] == "missing"
    assert "`t.model` raised RuntimeError: boom" in watcher.status()["message"]


@pytest.mark.parametrize("name", ["", "1x", "model[0]", "a..b", "class", "f()", 3])
def test_a_name_that_is_not_a_python_name_is_refused(name):
    with pytest.raises(ValueError, match="a name to follow is a Python name"):
        NameTarget(name, {})


def test_following_a_name_keeps_no_model_alive():
    ns = {"model": mlp()}
    graphdef, state = nnx.split(ns["model"])
    watcher = Watcher(NameTarget("model", ns))
    for step in range(3):
        ns["model"] = nnx.merge(graphdef, jax.tree.map(lambda x: x + step, state))  # noqa: B023 - called at once
        watcher.refresh(force=True)
    del state
    last = weakref.ref(ns["model"])
    ids = {id(x) for x in jax.tree.leaves(nnx.state(ns["model"]))}
    del ns["model"], graphdef
    gc.collect()
    assert last() is None, "the watcher kept the model alive"
    assert not ids & {id(x) for x in jax.live_arrays()}, "the watcher kept device arrays alive"
    watcher.refresh(force=True)
    assert watcher.state == "missing"  # not gone: the name may be bound again


# -- (graphdef, state, ...) pairs --------------------------------------------------------------------


def test_snapshot_of_a_split_pair_shows_the_state_under_the_model_class():
    model = mlp()
    single = nnx_lab.snapshot(nnx.split(model))
    several = nnx_lab.snapshot(nnx.split(model, nnx.Param, nnx.BatchStat))
    plain = nnx_lab.snapshot(model)
    for snap in (single, several):
        assert snap.root_type == "Sequential"
        assert sorted(r.path for r in snap.rows) == sorted(r.path for r in plain.rows)
        by_path = {r.path: r for r in snap.rows}
        for row in plain.rows:
            assert by_path[row.path].type == row.type
            assert by_path[row.path].stats["norm"] == pytest.approx(row.stats["norm"])
    assert str(single).startswith("Sequential: 6 variables")


def test_a_watched_pair_reuses_its_structure_and_goes_when_its_state_does():
    graphdef, params, stats = nnx.split(mlp(), nnx.Param, ...)
    watcher = Watcher((graphdef, params, stats))
    for _ in range(3):
        watcher.refresh(force=True)
    assert watcher.state == "live" and watcher.snapshot.root_type == "Sequential"
    assert (watcher._structure.walks, watcher._structure.hits) == (1, 2)
    ids = {id(x) for x in jax.tree.leaves(params)}
    del params
    gc.collect()
    assert not ids & {id(x) for x in jax.live_arrays()}
    assert watcher.refresh(force=True) is False and watcher.state == "gone"


def test_a_name_bound_to_a_pair_follows_the_functional_loop():
    graphdef, state = nnx.split(nnx.Linear(3, 2, rngs=nnx.Rngs(0)))
    tx, train_step = train_step_fn(graphdef)
    opt_state = tx.init(state)
    ns = {"pair": (graphdef, state)}
    watcher = Watcher(NameTarget("pair", ns), max_rate=100)
    watcher.refresh(force=True)
    for _ in range(3):
        state, opt_state = train_step(state, opt_state, jnp.ones((4, 3)), jnp.zeros((4, 2)))
        ns["pair"] = (graphdef, state)
        watcher.refresh(force=True)
    assert watcher.snapshot.root_type == "Linear" and watcher.refreshes == 4
    assert_current(watcher, nnx.merge(graphdef, state))


def hold_in_flight(monkeypatch, watcher):
    """Dispatch a refresh whose numbers have not arrived (as on a busy device): it stays in flight."""
    from nnx_lab.core.snapshot import PendingSnapshot

    with monkeypatch.context() as m:
        m.setattr(PendingSnapshot, "ready", lambda self: False)
        watcher.refresh(force=True, wait=False)
    assert len(watcher.engine.in_flight) == 1


def test_a_refresh_in_flight_when_the_name_goes_does_not_say_live(monkeypatch):
    ns = {"model": mlp()}
    watcher = Watcher(NameTarget("model", ns))
    watcher.refresh(force=True)
    hold_in_flight(monkeypatch, watcher)
    del ns["model"]
    with monkeypatch.context() as m:
        m.setattr(type(watcher.engine.in_flight[0]), "ready", lambda self: False)
        watcher.refresh(force=True)  # missing now; the earlier refresh still on its way
    assert watcher.state == "missing"
    watcher.wait()  # it arrives: its numbers are shown, the status stays
    assert watcher.refreshes == 2 and watcher.state == "missing"
    ns["model"] = mlp(seed=2)
    watcher.refresh(force=True)
    assert watcher.state == "live"


def test_a_refresh_in_flight_when_the_model_is_collected_does_not_say_live(monkeypatch):
    model = mlp()
    watcher = Watcher(model)
    hold_in_flight(monkeypatch, watcher)
    del model
    gc.collect()
    assert watcher.state == "gone"
    watcher.wait()  # the last values are shown; the model is still gone
    assert watcher.refreshes == 1 and watcher.state == "gone"
