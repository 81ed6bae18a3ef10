"""Series beside the rows: gradients (tick/log(grads=...)) and optimizer state (optimizer=...),
matched to the model's Variables by path, reduced with the parameters, never syncing in a tick."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from live_helpers import Clock, held_model, slow_step

from nnx_lab.core import compat
from nnx_lab.core.stats import STAT_NAMES
from nnx_lab.core.training import GRAD, leaf_paths, series_meta
from nnx_lab.core.watcher import Watcher

NORM = STAT_NAMES.index("norm")
MEAN = STAT_NAMES.index("mean")
MAX = STAT_NAMES.index("max")


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.layers = (
            nnx.List([nnx.Linear(3, 4, rngs=rngs), nnx.Linear(4, 2, rngs=rngs)])
            if hasattr(nnx, "List")
            else [nnx.Linear(3, 4, rngs=rngs), nnx.Linear(4, 2, rngs=rngs)]
        )
        self.bn = nnx.BatchNorm(2, rngs=rngs)

    def __call__(self, x):
        return self.bn(self.layers[1](jax.nn.relu(self.layers[0](x))))


def loss_fn(model):
    return (model(jnp.arange(15.0).reshape(5, 3) / 7) ** 2).mean()


def train_step(model, opt):
    grads = nnx.grad(loss_fn)(model)
    opt.update(model, grads)
    return grads


def norm(x):
    return float(np.sqrt((np.asarray(x, np.float64) ** 2).sum()))


def flat(tree):
    paths, leaves = leaf_paths(tree)
    return dict(zip(paths, leaves))


def params_of(model):
    return {p: np.asarray(v) for p, v in flat(nnx.state(model)).items()}


@pytest.fixture
def trained():
    model = MLP(nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    for _ in range(2):
        train_step(model, opt)
    return model, opt


def published(watcher):
    if watcher.snapshot is None and not watcher.engine.in_flight:
        watcher.refresh(force=True)
    watcher.wait()
    return watcher.snapshot


def test_grad_norms_and_ratios_equal_numpy_of_the_same_arrays(trained):
    model, opt = trained
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    grads = train_step(model, opt)
    clock.later()
    w.tick(grads=grads)
    snap = published(w)
    series = snap.series
    assert series.names == (GRAD,) and not series.stale and series.steps[GRAD] == 1
    param_norm = snap.stat_matrix[:, NORM]
    ratio = series.ratio(GRAD, param_norm)
    g = flat(grads)
    for i, path in enumerate(snap.paths):
        if path in g:
            assert series.matrices[GRAD][i, NORM] == pytest.approx(norm(g[path]), rel=1e-5)
            assert series.matrices[GRAD][i, MEAN] == pytest.approx(
                float(np.mean(np.asarray(g[path], np.float64))), rel=1e-4, abs=1e-7
            )
            theta = np.asarray(compat.get_value(getattr_path(model, path)))
            assert ratio[i] == pytest.approx(norm(g[path]) / norm(theta), rel=1e-5)
        else:  # BatchNorm's statistics have no gradient
            assert np.isnan(series.matrices[GRAD][i]).all() and np.isnan(ratio[i])


def getattr_path(obj, path):
    for k in path:
        obj = obj[k] if isinstance(k, int) else getattr(obj, k)
    return obj


def test_optimizer_state_is_aligned_by_path_with_its_step_count_shown_as_the_step_not_unmatched(trained):
    model, opt = trained
    w = Watcher(model, optimizer=opt)
    snap = published(w)
    series = snap.series
    assert series.names == ("mu", "nu")
    assert series.opt_step == 2
    state = flat(opt.opt_state)
    for i, path in enumerate(snap.paths):
        for name in ("mu", "nu"):
            key = (0, name, *path)
            if key in state:
                assert series.matrices[name][i, NORM] == pytest.approx(norm(state[key]), rel=1e-5)
            else:
                assert np.isnan(series.matrices[name][i]).all()
    # Adam's step count is the optimizer's step (shown as such), not a leaf "matched to no Variable"
    assert series.unmatched == []
    meta = series_meta(series, 2)
    assert meta["unmatched"] == [] and meta["unmatched_total"] == 0 and meta["opt_step"] == 2
    assert not any("no leaf matches" in p for p in meta["problems"])


def test_a_leaf_that_really_matches_no_variable_is_still_listed_beside_the_step_counts():
    model = MLP(nnx.Rngs(1))

    def init(params):
        return {"ema_loss": jnp.zeros(()), "count": jnp.zeros((), jnp.int32)}

    def update(updates, state, params=None):
        return updates, {"ema_loss": state["ema_loss"] + 1.0, "count": state["count"] + 1}

    opt = nnx.Optimizer(model, optax.chain(optax.adam(1e-2), optax.GradientTransformation(init, update)), wrt=nnx.Param)
    train_step(model, opt)
    series = published(Watcher(model, optimizer=opt)).series
    assert [(u[0], u[1]) for u in series.unmatched] == [("optimizer state", "[1].ema_loss")]
    assert series.unmatched[0][3]["max"] == 1
    meta = series_meta(series, 1)
    assert meta["unmatched_total"] == 1 and [u["path"] for u in meta["unmatched"]] == ["[1].ema_loss"]


def test_a_chain_names_each_state_and_lists_what_matches_nothing():
    model = MLP(nnx.Rngs(1))
    tx = optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.sgd(1e-2, momentum=0.9),
        optax.scale_by_schedule(optax.linear_schedule(1.0, 0.0, 10)),
    )
    opt = nnx.Optimizer(model, tx, wrt=nnx.Param)
    train_step(model, opt)
    series = published(Watcher(model, optimizer=opt)).series
    assert series.names == ("trace",)
    assert series.unmatched == []  # the schedule's count is the optimizer's step, not unmatched
    assert series.opt_step == 1


def test_same_named_states_are_told_apart_by_their_prefix():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.chain(optax.scale_by_adam(), optax.scale_by_adam()), wrt=nnx.Param)
    series = published(Watcher(model, optimizer=opt)).series
    assert sorted(series.names) == ["[0].mu", "[0].nu", "[1].mu", "[1].nu"]


def test_a_tick_without_grads_keeps_the_last_ones_marked_stale(trained):
    model, opt = trained
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    grads = train_step(model, opt)
    clock.later()
    w.tick(grads=grads)
    first = published(w).series.matrices[GRAD].copy()
    train_step(model, opt)
    clock.later()
    w.tick()  # no gradients this step
    series = published(w).series
    assert w.refreshes == 2 and series.stale == {GRAD} and series.steps[GRAD] == 1
    np.testing.assert_array_equal(series.matrices[GRAD], first)


def test_a_throttled_tick_keeps_only_the_last_steps_grads():
    """A throttled tick keeps its gradients (the cell's end refresh shows them) until the next step
    logs its own: at most one step's gradients are held."""
    import gc
    import weakref

    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    w = Watcher(model, max_rate=0.01)
    grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
    w.refresh(force=True)
    assert w.tick(grads=grads) is False  # throttled
    assert w.series._grads is grads
    first = weakref.ref(compat.get_value(grads["kernel"]))
    del grads
    w.tick(grads=nnx.grad(lambda m: m(2 * jnp.ones((1, 2))).sum())(model))  # the next step's
    gc.collect()
    assert first() is None


def test_watching_the_optimizer_alone_shows_its_state_as_rows_and_its_step(trained):
    _, opt = trained
    snap = published(Watcher(opt))
    assert any(p[:1] == ("opt_state",) for p in snap.paths)
    assert snap.series.opt_step == 2 and snap.series.names == ()


@pytest.mark.parametrize(
    "bad, says",
    [
        ("tracer", "a tracer"),
        ("deleted", "deleted"),
        ("text", "not an array (str)"),
        ("mismatch", "no leaf matches"),
    ],
)
def test_bad_grads_become_a_status_never_a_crash_and_the_model_is_unchanged(trained, bad, says):
    model, opt = trained
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    grads = nnx.grad(loss_fn)(model)
    if bad == "tracer":
        leaked = []
        jax.jit(lambda g: leaked.append(g) or 0)(grads)
        grads = leaked[0]
    elif bad == "deleted":
        g = flat(grads)[("layers", 0, "kernel")]
        g.delete()
    elif bad == "text":
        grads = {"layers": {0: {"kernel": "not an array"}}}
    else:
        grads = {"encoder": {"w": jnp.ones((7, 7))}}
    before = params_of(model)
    clock.later()
    w.tick(grads=grads)
    snap = published(w)
    assert w.state == "live" and snap is not None
    assert says in w.status()["message"]
    # (That refresh may have been skipped while a program compiled: the status says it all the same.)
    assert snap.series is None or not snap.series.problems or any(says in p for p in snap.series.problems)
    after = params_of(model)
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)


def test_a_tick_with_grads_never_waits_for_the_device():
    model, clock = held_model(), Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    g = compat.get_value(model.w)
    for _ in range(40):
        g = slow_step(g)
    assert not g.is_ready()  # queued
    w.refresh(force=True, wait=False)  # compiles (with no series)
    clock.later()
    w.tick(grads={"w": g})  # dispatched behind the queued work
    assert not g.is_ready(), "the tick waited for the gradients"
    snap = published(w)
    assert snap.series.matrices[GRAD][0, NORM] == pytest.approx(norm(g), rel=1e-5)


def test_optimizer_must_be_an_optimizer():
    with pytest.raises(TypeError, match="nnx.Optimizer"):
        Watcher(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), optimizer=object())


def test_a_nan_in_the_gradients_raises_the_alert_naming_the_series_and_path():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    clock = Clock()
    w = Watcher(model, max_rate=100.0, clock=clock)
    w.refresh(force=True)
    clock.later()
    for _ in range(3):
        clock.later()
        w.tick(grads={"kernel": jnp.array([[0.0, jnp.nan], [1.0, 2.0]]), "bias": jnp.zeros(2)})
        w.wait()
        if w.alert.first:
            break
    assert w.alert.first["where"] == "grad of kernel" and w.alert.first["source"] == GRAD
    assert w.alert.first["nan"] == 1 and w.alert.first["step"] == w.snapshot.series.steps[GRAD]
    assert "grad of kernel" in w.alert.text()


class Stacked(nnx.Module):
    """Three Linear(3, 3) blocks made by nnx.vmap (kernel (3, 3, 3)), run by nnx.scan, then a head."""

    def __init__(self):
        make = nnx.vmap(lambda key: nnx.Linear(3, 3, rngs=nnx.Rngs(key)), in_axes=0, out_axes=0)
        self.blocks = make(jax.random.split(jax.random.key(0), 3))
        self.head = nnx.Linear(3, 1, rngs=nnx.Rngs(1))

    def __call__(self, x):
        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def run(block, x):
            return jnp.tanh(block(x))

        return self.head(run(self.blocks, x))


def test_a_stacked_variables_gradient_and_optimizer_state_are_shown_per_layer_too():
    model = Stacked()
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x = jnp.arange(12.0).reshape(4, 3) / 5

    def step():
        grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
        opt.update(model, grads)
        return grads

    step()
    w = Watcher(model, optimizer=opt, layers={"blocks": 0})
    grads = step()
    w.log(grads=grads)
    w.refresh(force=True)
    snap = w.snapshot
    paths = [row.path_text for row in snap.rows]
    kernel = paths.index("blocks.kernel")
    g = np.asarray(grads["blocks"]["kernel"][...], np.float64)
    mu = np.asarray(opt.opt_state[0].mu["blocks"]["kernel"][...], np.float64)
    assert snap.series.matrices[GRAD][kernel, NORM] == pytest.approx(norm(g), rel=1e-5)
    for layer in range(3):
        row = kernel + 1 + layer  # the layers' rows follow their stacked Variable's
        assert snap.rows[row].layer_of == kernel and snap.rows[row].layer == layer
        assert snap.series.matrices[GRAD][row, NORM] == pytest.approx(norm(g[layer]), rel=1e-5)
        assert snap.series.matrices[GRAD][row, MEAN] == pytest.approx(g[layer].mean(), rel=1e-4, abs=1e-9)
        assert snap.series.matrices["mu"][row, NORM] == pytest.approx(norm(mu[layer]), rel=1e-5)
    head = paths.index("head.kernel")
    assert snap.series.matrices[GRAD][head, NORM] == pytest.approx(norm(grads["head"]["kernel"][...]), rel=1e-5)
