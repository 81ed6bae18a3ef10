"""Hostile inputs to the magics (issue 25 §3): one UsageError line, and a TARGET evaluated once."""

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

    ip.run_cell("from flax import nnx\nmodel = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\n"
                "import nnx_lab\nviewer = nnx_lab.watch(model)")
    viewer = ip.user_ns.pop("viewer")
    try:
        ip.run_cell("for step in range(2):\n    model = nnx.Linear(2, 3, rngs=nnx.Rngs(step))")  # a loop rebinding it
        gc.collect()
        viewer.watcher.refresh(force=True)
        status = viewer.watcher.status()
        assert status["state"] == "gone"
        assert status["message"] == ("the model was garbage-collected; `model` now holds another Linear (a loop "
                                     "rebinding it?): nnx_lab.watch('model') follows the name")
    finally:
        viewer.close()
        ip.user_ns.pop("model", None)
