"""capture_panel(model, layers=...): values sown inside nnx.scan over stacked layers get one row per
layer in the panel, as in %%nnx_capture and watch(layers=...)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scan_models import Scanned

from nnx_lab import capture_panel

pytestmark = pytest.mark.needs_flax("nnx.capture")
X = jnp.arange(6.0).reshape(2, 3) / 6


def layer_rows(report):
    return [(r.path_text, r.layer) for r in report.snapshot.rows if r.layer_of is not None]


@pytest.mark.parametrize("how", ["declared", "metadata"])
def test_panel_shows_one_row_per_layer_of_a_value_sown_inside_nnx_scan(how):
    model = Scanned(metadata=how == "metadata")
    panel = capture_panel(model, display=False, layers={"blocks": 0} if how == "declared" else None)
    panel(X)
    report = panel.last_report
    assert layer_rows(report) == [(f"blocks.y[0][layer {i}]", i) for i in range(4)]
    stacked = np.asarray(panel.captured["blocks"]["y"].get_value()[0])
    assert stacked.shape == (4, 2, 3)
    for i in range(4):
        row = report.snapshot[f"blocks.y[0][layer {i}]"]
        assert row.stats["mean"] == pytest.approx(stacked[i].mean(), rel=1e-5, abs=1e-6)
        assert row.stats["max"] == pytest.approx(stacked[i].max())
    rows = panel.report["snapshot"]["rows"]  # what the browser draws
    assert rows["layer"][1:5] == [0, 1, 2, 3]
    assert not report.messages


def test_without_a_declaration_an_unannotated_stack_stays_one_row():
    model = Scanned()  # (the panel holds it by weak reference)
    panel = capture_panel(model, display=False)
    panel(X)
    assert layer_rows(panel.last_report) == []


def test_a_declaration_that_fits_no_captured_value_is_a_message_and_one_row_per_value():
    model = Scanned()
    panel = capture_panel(model, display=False, layers={"nothing": 0})
    y = panel(X)
    assert y.shape == (2, 3)
    assert layer_rows(panel.last_report) == []
    assert "layers=: layers={'nothing': 0}: no Variable under 'nothing'" in panel.report["messages"]


def test_a_declaration_in_a_loop_gives_layer_rows_to_the_last_description():
    model = Scanned()
    panel = capture_panel(model, display=False, layers={"blocks": 0})
    for x in panel.track([X, X * 2, X * 3]):
        panel(x)
    stacked = np.asarray(panel.captured["blocks"]["y"].get_value()[0])
    report = panel.last_report
    assert report.snapshot["blocks.y[0][layer 3]"].stats["mean"] == pytest.approx(stacked[3].mean(), rel=1e-5)


@pytest.mark.parametrize(
    "layers, message",
    [
        ({"blocks": "0"}, "the layer axis is an int"),
        (["blocks"], "layers= takes a dict of path prefix -> layer axis"),
    ],
)
def test_a_malformed_declaration_is_a_one_line_type_error(layers, message):
    with pytest.raises(TypeError, match=message) as e:
        capture_panel(Scanned(), display=False, layers=layers)
    assert "\n" not in str(e.value)
