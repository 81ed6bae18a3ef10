"""Issue 35 §6: a Variable whose metadata ``__repr__`` raises: the row's status says so, in the
snapshot's table and in the viewer (its payload's note, shown in the status column, and the saved
notebook's copy), instead of a watch with no visible sign; the model is unchanged."""

import jax.numpy as jnp
from flax import nnx
from unchanged import assert_unchanged, frozen

import nnx_lab

SAID = "metadata tag: its repr raised ValueError: no repr today"


class Unprintable:
    def __repr__(self):
        raise ValueError("no repr today")


class Model(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones((2, 3)), tag=Unprintable())
        self.b = nnx.Param(jnp.zeros(3))


def test_the_snapshot_row_says_its_metadata_repr_raised():
    model = Model()
    snap = nnx_lab.snapshot(model)
    row = next(r for r in snap.rows if r.path_text == "w")
    assert row.status == "ok" and row.stats is not None  # the statistics are still there
    assert row.note == SAID and row.metadata == "tag=<repr failed: ValueError>"
    text = snap.to_text()
    assert "status" in text.splitlines()[1] and SAID in text
    assert SAID in snap._repr_html_()
    other = next(r for r in snap.rows if r.path_text == "b")
    assert other.note is None


def test_the_viewer_row_status_says_its_metadata_repr_raised():
    model = Model()
    before = frozen(model)
    viewer = nnx_lab.watch(model, display=False)
    viewer.last_snapshot
    payload = viewer.snapshot
    keys = payload["rows"]["key"]
    notes = payload["rows"]["note"]  # what the status column shows for that row
    assert notes[keys.index("w")] == SAID and notes[keys.index("b")] is None
    assert viewer.status["state"] == "live"
    _text, html = viewer._fallback()  # the table a saved notebook shows
    assert SAID in html
    viewer.close()
    assert_unchanged(model, before)
