"""The viewer's *compare to* control: pinned statistics (free), a device copy (the true change, its
bytes said), a checkpoint path; the "since" message each refresh; bad sources said in one line."""

from __future__ import annotations

import pytest
from flax import nnx

import nnx_lab


class Capture:
    def __init__(self, viewer):
        self.sent = []
        viewer.send = lambda msg, buffers=None: self.sent.append(msg)

    def since(self):
        return [m for m in self.sent if m.get("type") == "since"][-1]


def paths(viewer):
    return [r.path_text for r in viewer.last_snapshot.rows]


def test_pinned_statistics_give_a_lower_bound_of_the_change():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    sent = Capture(viewer)
    viewer.compare_to("stats")
    first = sent.since()
    assert first["values"] == [0.0, 0.0] and first["baseline"]["kind"] == "stats"
    assert first["baseline"]["device_bytes"] == 0  # host numbers only
    model.kernel[...] = model.kernel[...] * 1.5
    viewer.refresh()
    viewer.last_snapshot
    values = dict(zip(paths(viewer), sent.since()["values"]))
    assert values["kernel"] == pytest.approx(0.5, rel=1e-3) and values["bias"] == 0.0
    assert viewer.since() == values
    viewer.compare_to(None)
    assert sent.since()["values"] is None and viewer.since() == {}
    viewer.close()


def test_a_device_copy_gives_the_true_change_and_says_its_bytes():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    sent = Capture(viewer)
    viewer.compare_to("arrays")
    b = sent.since()["baseline"]
    assert b["kind"] == "arrays" and b["device_bytes"] == 36 and "device copy: 36 B" in b["label"]
    # A rotation at constant norm: the statistics' bound sees nothing, the copy sees it all.
    model.kernel[...] = -model.kernel[...]
    viewer.refresh()
    viewer.last_snapshot
    values = dict(zip(paths(viewer), sent.since()["values"]))
    assert values["kernel"] == pytest.approx(2.0, rel=1e-5)
    viewer.close()


def test_a_checkpoint_path_as_the_baseline(tmp_path):
    ocp = pytest.importorskip("orbax.checkpoint")
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(tmp_path / "ckpt", nnx.state(model))
    checkpointer.wait_until_finished()
    viewer = nnx_lab.watch(model, display=False)
    sent = Capture(viewer)
    viewer.compare_to(str(tmp_path / "ckpt"))
    assert sent.since()["baseline"]["kind"] == "checkpoint"
    assert sent.since()["baseline"]["path"] == str(tmp_path / "ckpt")  # the control's path box shows it
    assert sent.since()["values"] == [pytest.approx(0.0, abs=1e-6)] * 2
    viewer.close()


def test_a_view_drawn_after_compare_to_is_told_the_pinned_baseline():
    """compare_to("stats") from Python, then the viewer shown (or shown again): the browser's first
    requests get the "since" message whose baseline kind its "compare to" control selects."""
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    viewer.compare_to("stats")
    sent = Capture(viewer)  # a new view: only what its requests bring
    viewer._on_message(viewer, {"type": "stats", "id": 1}, [])
    assert sent.since()["baseline"]["kind"] == "stats" and "since refresh 1" in sent.since()["baseline"]["label"]
    viewer.close()


def test_bad_sources_are_one_line_acks():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    reply = viewer._compare_to_request({"type": "compare_to", "source": "path", "path": "/no/such/dir"}, None)
    assert reply["state"] == "error" and "not a directory" in reply["message"] and "\n" not in reply["message"]
    with pytest.raises(TypeError, match="expected 'stats', 'arrays'"):
        viewer.compare_to(42)
    assert viewer._compare_to_request({"type": "compare_to", "source": "none"}, None) == {"state": "done"}
    viewer.close()


def test_float32_rounding_of_the_norms_is_no_change():
    from nnx_lab.widgets.viewer_baseline import Baseline

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    snap = viewer.last_snapshot
    norms = {r.path_text: r.stats["norm"] for r in snap.rows}
    nudged = Baseline("stats", "", {p: n * (1 + 5e-8) for p, n in norms.items()})  # another summation order
    assert nudged.since(snap) == [0.0, 0.0]
    moved = Baseline("stats", "", {p: n * 1.01 for p, n in norms.items()})
    assert [v == pytest.approx(0.0099, rel=1e-2) for v in moved.since(snap)] == [False, True]  # bias: 0 stays 0
    viewer.close()


@pytest.mark.parametrize(
    "content",
    [
        {"type": "compare_to"},  # no source
        {"type": "compare_to", "source": "path"},  # no path
        {"type": "compare_to", "source": "path", "path": None},
        {"type": "compare_to", "source": "path", "path": "  "},
        {"type": "compare_to", "source": None},
        {"type": "compare_to", "source": "stat"},  # an unknown source is not a checkpoint path either
        {"type": "compare_to", "source": ["stats"]},
    ],
)
def test_a_malformed_pin_message_is_an_error_and_keeps_the_baseline(content):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    sent = Capture(viewer)
    viewer.compare_to("stats")
    viewer._on_message(viewer, {**content, "id": 5}, [])
    (ack,) = [m for m in sent.sent if m.get("type") == "ack"]
    assert ack["id"] == 5 and ack["state"] == "error"
    assert ack["message"].startswith("compare to: ") and "baseline is unchanged" in ack["message"]
    assert "\n" not in ack["message"] and len(ack["message"]) < 300
    assert viewer.since() == {"bias": 0.0, "kernel": 0.0}  # still pinned
    viewer._on_message(viewer, {"type": "compare_to", "source": "none", "id": 6}, [])  # "none" alone unpins
    assert [m for m in sent.sent if m.get("type") == "ack"][-1] == {"type": "ack", "id": 6, "state": "done"}
    assert viewer.since() == {}
    viewer.close()


class Two(nnx.Module):
    def __init__(self, width: int):
        self.l1 = nnx.Linear(2, width, rngs=nnx.Rngs(0))
        self.l2 = nnx.Linear(width, 2, rngs=nnx.Rngs(1))


@pytest.mark.parametrize("source", ["snapshot", "checkpoint"])
def test_a_baseline_of_another_shape_is_refused_per_row_as_compare_does(source, tmp_path):
    # issue 35: matched by path text alone, it said l1.kernel: 0.797 between (2, 4) and (2, 8) arrays
    model, other = Two(4), Two(8)
    viewer = nnx_lab.watch(model, display=False)
    sent = Capture(viewer)
    if source == "snapshot":
        baseline = nnx_lab.snapshot(other)
    else:
        ocp = pytest.importorskip("orbax.checkpoint")
        checkpointer = ocp.StandardCheckpointer()
        baseline = str(tmp_path / "ckpt")
        checkpointer.save(baseline, nnx.state(other))
        checkpointer.wait_until_finished()
    viewer.compare_to(baseline)
    since = viewer.since()
    expected = {r.path: r.status for r in nnx_lab.compare(model, other).rows}
    assert expected == {"l1.kernel": "shape", "l1.bias": "shape", "l2.kernel": "shape", "l2.bias": "identical"}
    assert since["l1.kernel"] == since["l1.bias"] == since["l2.kernel"] == "shape"
    assert since["l2.bias"] == 0.0  # the same shape (2,): compared
    assert dict(zip(paths(viewer), sent.since()["values"])) == since  # what the "since" column gets
    viewer.close()


def test_a_device_copy_baseline_says_shape_where_the_followed_model_changed_shape():
    import jax.numpy as jnp

    from nnx_lab.widgets.viewer_baseline import Baseline

    base = Baseline("arrays", "", copy={"w": jnp.ones((2, 3)), "b": jnp.ones(2)})
    snap = nnx_lab.snapshot({"w": jnp.ones((3, 3)), "b": jnp.ones(2) * 2})
    values = dict(
        zip([r.path_text for r in snap.rows], base.since(snap, {"w": jnp.ones((3, 3)), "b": jnp.ones(2) * 2}))
    )
    assert values["w"] == "shape" and values["b"] == pytest.approx(1.0)
