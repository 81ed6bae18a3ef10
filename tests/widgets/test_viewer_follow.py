"""A viewer following a name in the notebook: watch("model") and %nnx_watch model (functional loops)."""

import gc
import re
import weakref

import numpy as np
import pytest
from flax import nnx
from IPython.core.error import UsageError
from viewer_wire import Wire

import nnx_lab

SETUP = (
    "import jax\nfrom flax import nnx\n"
    "model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.BatchNorm(4, rngs=nnx.Rngs(0)))\n"
    "graphdef, state = nnx.split(model)\n"
)
STEP = "state = jax.tree.map(lambda x: x * 2 + 1, state)\nmodel = nnx.merge(graphdef, state)\n"


def shown_means(wire):
    """The mean column the browser shows (``wire``: a Wire on the viewer), by row key (``layers.0.kernel``...)."""
    return dict(zip(row_texts(wire.viewer.snapshot), wire.stats()["mean"]))


def row_texts(payload):
    nodes, rows = payload["nodes"], payload["rows"]

    def text(parent, key):
        parts = [key]
        while parent >= 0:
            parts.append(nodes["key"][parent])
            parent = nodes["parent"][parent]
        return ".".join(str(k) for k in reversed(parts))

    return [text(p, k) for p, k in zip(rows["parent"], rows["key"])]


def numpy_means(model):
    return {
        ".".join(str(k) for k in path): float(np.asarray(var[...]).mean())
        for path, var in nnx.to_flat_state(nnx.state(model))
    }


def run(ip, code):
    result = ip.run_cell(code)
    assert result.success, result.error_in_exec or result.error_before_exec


def test_watch_a_name_follows_the_model_a_cell_rebinds(ip):
    run(ip, SETUP)
    viewer = nnx_lab.watch("model", display=False)
    wire = Wire(viewer)
    assert viewer.status["message"] == "following `model`"
    before = viewer.status["refreshes"]
    for step in range(3):
        run(ip, STEP)  # a new model object each cell; the post-cell refresh follows the name
        viewer.last_snapshot  # (published from a thread where the kernel allows it)
        assert viewer.status["state"] == "live"
        assert viewer.status["refreshes"] == before + step + 1
        means = shown_means(wire)
        for path, mean in numpy_means(ip.user_ns["model"]).items():
            assert means[path] == pytest.approx(mean, rel=1e-3)


def test_a_followed_name_missing_or_not_a_model_is_a_status_then_recovers(ip):
    run(ip, SETUP)
    viewer = nnx_lab.watch("model", display=False)
    run(ip, "model = 'oops'")
    assert viewer.status["state"] == "missing"
    assert viewer.status["message"] == "following `model`; `model` is a str, not a model"
    run(ip, "del model")
    assert viewer.status["message"] == "following `model`; `model` is not defined"
    assert viewer.snapshot["root_type"] == "Sequential"  # the last rows stay on screen
    run(ip, "model = nnx.Linear(2, 5, rngs=nnx.Rngs(0))")  # another structure: its rows
    viewer.last_snapshot
    assert viewer.status["state"] == "live"
    assert viewer.snapshot["root_type"] == "Linear"
    assert row_texts(viewer.snapshot) == ["bias", "kernel"]
    assert viewer.snapshot["rows"]["shape"] == [[5], [2, 5]]


def test_watch_a_name_keeps_no_model_alive(ip):
    run(ip, SETUP + STEP)
    viewer = nnx_lab.watch("model", display=False)
    last = weakref.ref(ip.user_ns["model"])
    run(ip, "del model, state, graphdef")
    gc.collect()
    assert last() is None
    assert viewer.status["state"] == "missing"


def test_watch_a_name_outside_ipython_is_a_one_line_error(monkeypatch):
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "watch('model') follows a name in IPython's namespace, and no IPython shell is running; "
            "pass the model itself: watch(model)"
        ),
    ):
        nnx_lab.watch("model", display=False)


def test_watch_a_bad_name_is_a_one_line_error(ip):
    with pytest.raises(ValueError, match="a name to follow is a Python name"):
        nnx_lab.watch("model[0]", display=False)


def test_nnx_watch_follows_a_name_by_default(ip):
    run(ip, SETUP)
    ip.run_line_magic("nnx_watch", "model --as viewer")
    viewer = ip.user_ns["viewer"]
    wire = Wire(viewer)
    viewer.last_snapshot
    assert viewer.status["message"] == "following `model`"
    before = viewer.status["refreshes"]
    run(ip, STEP)
    viewer.last_snapshot
    assert viewer.status["refreshes"] == before + 1 and viewer.status["state"] == "live"
    means = shown_means(wire)
    for path, mean in numpy_means(ip.user_ns["model"]).items():
        assert means[path] == pytest.approx(mean, rel=1e-3)


def test_nnx_watch_pin_holds_the_object_and_says_gone(ip):
    run(ip, SETUP)
    ip.run_line_magic("nnx_watch", "model --pin --as viewer")
    viewer = ip.user_ns["viewer"]
    assert "following" not in viewer.status["message"]
    run(ip, STEP + "import gc; gc.collect();")
    assert viewer.status["state"] == "gone"


def test_nnx_watch_follows_dotted_names_and_pins_expressions(ip):
    run(ip, SETUP + "class Trainer: pass\ntrainer = Trainer(); trainer.model = model\nheads = {'a': model}\n")
    ip.run_line_magic("nnx_watch", "trainer.model --as v1")
    ip.run_line_magic("nnx_watch", "heads['a'] --as v2")
    assert ip.user_ns["v1"].status["message"] == "following `trainer.model`"
    assert "following" not in ip.user_ns["v2"].status["message"]
    run(ip, "trainer.model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))")
    ip.user_ns["v1"].last_snapshot, ip.user_ns["v2"].last_snapshot
    assert ip.user_ns["v1"].snapshot["root_type"] == "Linear"
    assert ip.user_ns["v2"].snapshot["root_type"] == "Sequential"


def test_nnx_watch_a_name_bound_to_a_split_pair(ip):
    run(ip, SETUP + "pair = nnx.split(model, nnx.Param, ...)\n")
    ip.run_line_magic("nnx_watch", "pair --as viewer")
    viewer = ip.user_ns["viewer"]
    wire = Wire(viewer)
    assert viewer.snapshot["root_type"] == "Sequential"
    assert sorted(row_texts(viewer.snapshot)) == sorted(numpy_means(ip.user_ns["model"]))
    run(ip, "pair = (graphdef, jax.tree.map(lambda x: x + 5, state))")
    viewer.last_snapshot
    assert viewer.status["state"] == "live"
    means = shown_means(wire)
    assert means["layers.0.bias"] == pytest.approx(5.0)


@pytest.mark.parametrize(
    "line, message",
    [
        ("model", "expected an nnx.Module"),  # a name followed must hold a model when the viewer is made
        ("nosuch", "name 'nosuch' is not defined"),
    ],
)
def test_nnx_watch_a_name_that_holds_no_model_now_is_a_usage_error(ip, line, message):
    ip.user_ns["model"] = 42
    with pytest.raises(UsageError, match=re.escape(message)):
        ip.run_line_magic("nnx_watch", line)


def test_nnx_watch_help_says_it_follows_names(ip):
    doc = ip.magics_manager.magics["line"]["nnx_watch"].__doc__
    assert "--pin" in doc and "following `model`" in doc and "followed" in doc
