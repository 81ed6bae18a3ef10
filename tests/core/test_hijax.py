"""flax's hijax Variables (``nnx.var_defaults(hijax=True)``, flax's hijax guide): every Variable is
a ``HijaxVariable`` holding its declared type, and jax sees it as a leaf, not a pytree node. A
viewer reads an optimizer's hijax state like any Variable's, and rows show the declared type."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.stats import STAT_NAMES
from nnx_lab.core.training import GRAD
from nnx_lab.core.watcher import Watcher

pytestmark = pytest.mark.skipif(
    compat.HIJAX_VARIABLE is None or not hasattr(nnx, "var_defaults"),
    reason=f"flax {compat.FLAX_VERSION} has no hijax Variables (nnx.var_defaults(hijax=True) came in flax 0.12)",
)

NORM = STAT_NAMES.index("norm")
MEAN = STAT_NAMES.index("mean")


class Block(nnx.Module):
    """The hijax guide's training-loop model; a LayerNorm for its BatchNorm (whose hijax statistics
    fail under jax 0.10's trace: "DynamicJaxprTracer has no attribute _can_update"), and a
    non-parameter Variable that no optimizer state matches."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 16, rngs=rngs)
        self.norm = nnx.LayerNorm(16, rngs=rngs)
        self.linear_out = nnx.Linear(16, 3, rngs=rngs)
        self.seen = nnx.BatchStat(jnp.zeros((), jnp.int32))

    def __call__(self, x):
        return self.linear_out(nnx.gelu(self.norm(self.linear(x))))


@jax.jit
def train_step(model, optimizer, x, y):
    """The guide's step; its gradient taken of lojax copies of the parameters (the guide's
    ``with_vars(mutable=False)`` fails under jax 0.10's grad), so the gradients are plain Params."""
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss_fn(params):
        return ((nnx.merge(graphdef, params, rest)(x) - y) ** 2).mean()

    loss, grads = jax.value_and_grad(loss_fn)(nnx.with_vars(params, hijax=False))
    optimizer.update(model, grads)
    return loss, grads


@pytest.fixture
def hijax_model():
    with nnx.var_defaults(hijax=True):
        model = Block(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    assert type(model.linear.kernel) is compat.HIJAX_VARIABLE  # what this file is about
    return model, optimizer


def norm(x):
    return float(np.sqrt((np.asarray(x, np.float64) ** 2).sum()))


def test_rows_show_each_variables_declared_type(hijax_model):
    model, optimizer = hijax_model
    types = {r.path_text: r.type for r in nnx_lab.snapshot(model).rows}
    assert types["linear.kernel"] == "Param" and types["seen"] == "BatchStat"
    opt_types = {r.path_text: r.type for r in nnx_lab.snapshot(optimizer).rows}
    assert opt_types["opt_state[0].mu.linear.kernel"] == "OptArray" and opt_types["step"] == "OptState"
    assert "HijaxVariable" not in set(types.values()) | set(opt_types.values())
    assert nnx_lab.snapshot(model.linear.kernel).rows[0].type == "Param"


def test_optimizer_state_and_gradients_are_read_like_any_variables(hijax_model):
    model, optimizer = hijax_model
    x, y = jnp.ones((10, 2)), jnp.ones((10, 3))
    w = Watcher(model, optimizer=optimizer, max_rate=100.0)
    for _ in range(3):
        _, grads = train_step(model, optimizer, x, y)
    w.tick(grads=grads)
    w.wait()
    snap = w.snapshot
    series = snap.series
    assert not series.problems, series.problems  # was: "optimizer state: 5 leaves not an array (HijaxVariable)"
    assert set(series.names) == {GRAD, "mu", "nu"} and series.opt_step == 3
    state = optimizer.opt_state[0]
    rows = {r.path_text: i for i, r in enumerate(snap.rows)}
    for path in ("linear.kernel", "linear.bias", "norm.scale", "linear_out.kernel"):
        i = rows[path]
        keys = path.split(".")
        for name in ("mu", "nu"):
            leaf = getattr(state, name)[keys[0]][keys[1]]
            assert series.matrices[name][i, NORM] == pytest.approx(norm(leaf[...]), rel=1e-5)
        assert series.matrices[GRAD][i, NORM] == pytest.approx(norm(grads[keys[0]][keys[1]][...]), rel=1e-5)
    assert np.isnan(series.matrices["mu"][rows["seen"]]).all()  # a batch statistic has no Adam state
    # The rows are the trained values: the model's hijax Variables are read afresh at each refresh.
    i = rows["linear.kernel"]
    assert snap.stat_matrix[i, MEAN] == pytest.approx(
        float(np.mean(np.asarray(model.linear.kernel[...], np.float64))), rel=1e-5, abs=1e-7
    )
