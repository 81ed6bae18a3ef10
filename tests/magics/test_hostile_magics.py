"""Hostile inputs to the magics (issue 25 §3): one UsageError line, and a TARGET evaluated once."""

import jax.numpy as jnp
import pytest
from flax import nnx
from IPython.core.error import UsageError


class Inner:
    def __init__(self):
        self._model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        self.reads = 0

    @property
    def model(self):  # a property with a side effect: counted
        self.reads += 1
        return self._model


class Trainer:
    def __init__(self):
        self.inner = Inner()


@pytest.fixture
def trainer(ip):
    ip.user_ns["trainer"] = Trainer()
    yield ip.user_ns["trainer"]
    ip.user_ns.pop("trainer", None)


def test_a_followed_targets_property_is_read_once_for_the_line(ip, trainer):
    ip.run_line_magic("nnx_watch", "trainer.inner.model --no-stats --as viewer")
    viewer = ip.user_ns.pop("viewer")
    try:
        assert trainer.inner.reads == 1  # 4 before: evaluated, checked, resolved twice
        assert viewer.watcher.state == "live"
        viewer.watcher.refresh(force=True)  # a later refresh follows the name: read again
        assert trainer.inner.reads == 2
    finally:
        viewer.close()


@pytest.mark.parametrize("axis", ["²", "--1", "-", "1.5", "١"])
def test_a_layer_axis_that_is_not_an_integer_is_one_usage_error(ip, axis):
    ip.user_ns["model"] = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    for magic in ("nnx_watch", "nnx_snapshot"):
        with pytest.raises(UsageError, match="is not PREFIX=AXIS"):
            ip.run_line_magic(magic, f"model --no-stats --layers blocks={axis}")
    ip.user_ns.pop("model")


def test_a_pinned_model_rebound_by_a_loop_says_which_name_holds_the_new_one(ip):
    import gc

    ip.run_cell(
        "from flax import nnx\nmodel = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\n"
        "import nnx_lab\nviewer = nnx_lab.watch(model)"
    )
    viewer = ip.user_ns.pop("viewer")
    try:
        ip.run_cell("for step in range(2):\n    model = nnx.Linear(2, 3, rngs=nnx.Rngs(step))")  # a loop rebinding it
        gc.collect()
        viewer.watcher.refresh(force=True)
        status = viewer.watcher.status()
        assert status["state"] == "gone"
        assert status["message"] == (
            "the model was garbage-collected; `model` now holds another Linear (a loop "
            "rebinding it?): nnx_lab.watch('model') follows the name"
        )
    finally:
        viewer.close()
        ip.user_ns.pop("model", None)


class RNNCell(nnx.Module):  # flax's randomness guide
    def __init__(self, din, dh, rngs):
        self.linear = nnx.Linear(dh + din, dh, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.dh = dh

    def __call__(self, carry, x):
        import jax

        x = jax.nn.relu(self.drop(self.linear(jnp.concatenate([carry, x], axis=-1))))
        return x, x


@pytest.mark.needs_flax("nnx.capture")
def test_capture_methods_around_a_scan_without_graph_is_one_line(ip):
    if not (hasattr(nnx, "prefix") and hasattr(nnx, "with_rngs")):
        pytest.skip("this flax has no nnx.prefix / nnx.with_rngs")

    @nnx.jit(graph=False)
    def rnn_forward(cell, x):
        axes = nnx.prefix(cell, {"dropout": 0, ...: None}, graph=False)

        @nnx.with_rngs(split=x.shape[1], only="dropout", graph=False)
        @nnx.scan(in_axes=(nnx.Carry, axes, 1), out_axes=(nnx.Carry, 1), graph=False)
        def unroll(carry, cell, x):
            return cell(carry, x)

        return unroll(jnp.zeros((x.shape[0], cell.dh)), cell, x)[1]

    cell = RNNCell(8, 16, nnx.Rngs(params=0, dropout=1))
    ip.user_ns.update(cell=cell, x=jnp.ones((4, 5, 8)), rnn_forward=rnn_forward)
    rnn_forward(cell, ip.user_ns["x"])  # the guide's call works without a capture
    with pytest.raises(UsageError) as info:  # a 114-line TypeError traceback before
        ip.run_cell_magic("nnx_capture", "cell --methods", "y = rnn_forward(cell, x)")
    text = str(info.value)
    assert "\n" not in text and "inside a jax scan" in text and "capture without methods" in text
    assert "__captures__" not in vars(cell)
    for name in ("cell", "x", "rnn_forward", "y"):
        ip.user_ns.pop(name, None)


@pytest.mark.needs_flax("nnx.capture")
def test_capture_methods_around_jax_jit_of_a_module_says_where_the_values_went(ip, monkeypatch):
    import jax

    import nnx_lab.widgets.capture_report as capture_report  # the panel %%nnx_capture draws

    reports = []
    monkeypatch.setattr(capture_report, "CaptureReportView", lambda report, **view: reports.append(report) or report)
    ip.user_ns.update(linear=nnx.Linear(2, 3, rngs=nnx.Rngs(0)), x=jnp.ones((1, 2)), jax=jax, nnx=nnx)
    ip.run_cell_magic("nnx_capture", "linear --methods", "y = jax.jit(lambda m, x: m(x))(linear, x)")
    (report,) = reports
    assert any(
        m.startswith("1 method call ran on copies of the model inside a jax transform") and "nnx.jit" in m
        for m in report.messages
    )
    ip.run_cell_magic("nnx_capture", "linear --methods", "y = nnx.jit(lambda m, x: m(x))(linear, x)")
    assert not any("copies of the model" in m for m in reports[-1].messages)  # nnx.jit brings them back
    for name in ("linear", "x", "y"):
        ip.user_ns.pop(name, None)
