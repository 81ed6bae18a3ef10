"""The split report widget, without a browser: the synced trait and the saved-notebook fallbacks."""

import json

import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_lab.core.render import split_html
from nnx_lab.core.split import split_report
from nnx_lab.widgets.split import STATIC, SplitReportView

EVIL = "<script>alert(1)</script>"


class Model(nnx.Module):
    def __init__(self):
        self.linear = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        self.bn = nnx.BatchNorm(3, rngs=nnx.Rngs(0))
        self.d = nnx.data({EVIL: nnx.Param(jnp.ones(2))})  # a plain dict: flax 0.11 has no nnx.Dict
        self.shared = self.linear.kernel


@pytest.fixture
def model():
    return Model()


def bundle_data(widget):
    bundle = widget._repr_mimebundle_()
    return bundle[0] if isinstance(bundle, tuple) else bundle


def test_trait_is_the_report_plus_code_and_names(model):
    report = split_report(model, nnx.Param, nnx.Variable, nnx.PathContains("nothing"))
    view = SplitReportView(report)
    data = view.report
    assert json.loads(json.dumps(data)) == data  # plain JSON, as the front end gets it
    assert {k: v for k, v in data.items() if k not in ("code", "names")} == report.to_dict()
    assert data["names"] == ["graphdef", "param", "variable", "nothing"]
    assert (
        data["code"]
        == report.code("model")
        == (
            f"graphdef, param, variable, nothing = nnx.split(model, nnx.Param, nnx.Variable, {report.filters[2].label})"
        )
    )
    rows = data["rows"]
    by_path = dict(zip(rows["path"], zip(rows["taken_by"], rows["matched_by"], rows["aliases"])))
    assert by_path["linear.kernel"] == (0, [0, 1], ["shared"])  # taken by Param, shadowed by Variable
    assert by_path["bn.mean"] == (1, [1], [])
    assert by_path[f"d[{EVIL!r}]"] == (0, [0, 1], [])
    assert [f["count"] for f in data["filters"]] == [5, 2, 0]
    assert any("took nothing" in p for p in data["problems"])
    assert view.split_report is report
    assert view.trait_metadata("report", "sync") is True
    assert view._esm == (STATIC / "split.js").read_text()  # anywidget reads the bundle in


def test_target_and_names(model):
    report = split_report(model, nnx.Param, ...)
    view = SplitReportView(report, target="self.net", names=["gd", "params", "rest"])
    assert view.report["code"] == "gd, params, rest = nnx.split(self.net, nnx.Param, ...)"
    assert view.report["names"] == ["gd", "params", "rest"]
    assert SplitReportView(report, names=[]).report["names"] == ["graphdef", "param", "rest"]
    with pytest.raises(ValueError, match="3 values"):
        SplitReportView(report, names=["a", "b"])


def test_mimebundle_has_stable_text_and_escaped_html(model):
    report = split_report(model, nnx.Param, nnx.BatchStat)
    view = SplitReportView(report)
    data = bundle_data(view)
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"] == report.to_text() == bundle_data(view)["text/plain"]
    assert data["text/plain"].splitlines()[:3] == [
        "split of Model: 7 Variables into 2 filters",
        "  [1] nnx.Param -> param: 5 Variables, 68 B (Param 5)",
        "  [2] nnx.BatchStat -> batch_stat: 2 Variables, 24 B (BatchStat 2)",
    ]
    html = data["text/html"]
    assert html == split_html(report)
    assert EVIL not in html and "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert repr(view) == "SplitReportView · split of Model: 7 Variables into 2 filters"


def test_mimebundle_of_a_non_exhaustive_split_names_the_remainder():
    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.1, rngs=nnx.Rngs(1)))
    report = split_report(model, nnx.Param)
    data = bundle_data(SplitReportView(report))
    assert "add `...` as the last filter" in data["text/plain"]
    assert "remainder" in data["text/html"]
    assert SplitReportView(report).report["rows"]["taken_by"].count(None) == 2
