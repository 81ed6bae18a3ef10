"""The non-finite report widget: its payload (Python's strings: verdict, primitive, bad counts, the
module calls on the path with the culprit last), its saved text/HTML copy, and a report displayed in a
kernel showing the widget (text and escaped HTML elsewhere, the magic too)."""

import jax.numpy as jnp
import numpy as np
import pytest
from IPython.core.formatters import DisplayFormatter
from nonfinite.models import Stack, mse

import nnx_lab
from nnx_lab.core.render import format_stat
from nnx_lab.widgets import nonfinite as nonfinite_widget
from nnx_lab.widgets.nonfinite import NonfiniteView

X = jnp.linspace(-1.0, 1.0, 32).reshape(4, 8)


def report():
    return nnx_lab.find_nonfinite(mse, Stack(fault_at=2, fault="log"), X, jnp.zeros((4, 1)))


def strings(tree):
    if isinstance(tree, dict):
        return all(strings(v) for v in tree.values())
    if isinstance(tree, list):
        return all(strings(v) for v in tree)
    return isinstance(tree, (str, bool))


def test_the_payload_names_the_culprit_and_the_calls_on_its_path():
    p = report().payload()
    assert p["verdict"] == "the forward pass first produced NaN/Inf in blocks.2 (Block.__call__)"
    assert p["direction"] == "forward" and p["lines"][0] == "primitive: log"
    assert p["bad"] == [{"name": "out", "nan": "15", "inf": "0", "first": "(0, 0)"}]
    assert [(r["path"], r["call"], r["culprit"]) for r in p["rows"]] == [
        ("(root)", "Stack.__call__", False),
        ("blocks.2", "Block.__call__", True),
    ]
    assert "NaN 15" in p["rows"][1]["outputs"] and "(4, 8) float32" in p["rows"][1]["inputs"]
    assert strings(p)  # Python wrote every number


def test_the_widget_carries_its_text_and_html_copy():
    r = report()
    view = NonfiniteView(r)
    data = view._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    assert data["text/plain"] == r.to_text()
    assert "blocks.2 (Block.__call__)" in data["text/html"]
    assert view.report == r.payload()
    with pytest.raises(TypeError, match="NonfiniteView shows a NonfiniteReport"):
        NonfiniteView("not a report")


def test_a_report_shows_the_widget_in_a_kernel_and_text_elsewhere(monkeypatch):
    r = report()
    assert r._ipython_display_ is None  # no kernel: IPython shows the text and HTML
    shown = []
    monkeypatch.setattr(nonfinite_widget, "widgets_work", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(obj))
    show = r._ipython_display_
    assert callable(show)
    show()
    assert isinstance(shown[0], NonfiniteView) and shown[0].result is r
    assert DisplayFormatter().format(r)  # still formats as text/HTML


def test_a_report_shows_the_widget_in_marimo():
    """marimo asks ``_display_()`` (tests/browser/test_marimo_browser.py draws it): the widget of this report."""
    r = report()
    view = r._display_()
    assert isinstance(view, NonfiniteView) and view.result is r
    assert view.report == r.payload()
    view.close()


def test_backward_and_input_payloads():
    back = nnx_lab.find_nonfinite(mse, Stack(fault_at=4, fault="sqrt"), jnp.zeros((4, 8)), jnp.zeros((4, 1)))
    p = back.payload()
    assert p["direction"] == "backward" and p["verdict"].startswith("the backward pass")
    assert [r["path"] for r in p["rows"]] == ["(root)", "blocks.4"] and p["rows"][-1]["culprit"]
    # The culprit's cotangents and non-finite gradients, as the text says them (the rows hold forward values).
    assert any(line.startswith("input cotangent ") and "NaN 32" in line for line in p["lines"])
    assert any(line.startswith("output cotangent ") for line in p["lines"])
    assert p["bad_caption"] == "bad cotangent elements"
    assert all(line in back.to_text() for line in p["lines"])
    bad_x = X.at[1, 2].set(jnp.nan)
    p = nnx_lab.find_nonfinite(mse, Stack(), bad_x, jnp.zeros((4, 1))).payload()
    assert (p["direction"], p["rows"]) == ("input", [])
    # the widget's bad table: Python's labels, and per argument leaf its cells (numbers as numpy counts them)
    assert [label for _, label in p["bad_columns"]] == [
        "argument",
        "array",
        "bad",
        "NaN",
        "+Inf",
        "-Inf",
        "first bad at",
        "finite values",
    ]
    finite = np.asarray(bad_x)[np.isfinite(bad_x)].astype(np.float64)
    assert [[row[key] for key, _ in p["bad_columns"]] for row in p["bad"]] == [
        [
            "args[1]",
            "(4, 8) float32",
            "1 of 32",
            "1",
            "0",
            "0",
            "(1, 2)",
            f"min {format_stat(finite.min())}  max {format_stat(finite.max())}  mean {format_stat(finite.mean())}",
        ]
    ]
    many = nnx_lab.find_nonfinite(lambda m, *xs: mse(m, X, jnp.zeros((4, 1))), Stack(), *[bad_x] * 45).payload()
    assert len(many["bad"]) == 20 and many["lines"] == [
        "and 25 more, the first 20: " + ", ".join(f"args[{i}]" for i in range(21, 41))
    ]


def test_every_verdict_makes_its_widget():
    """Each of find_nonfinite's four verdicts is a payload the widget's checked trait takes: before the
    trait knew "input", NaN already in the arguments (a model loaded with an Inf) showed a traceback and
    fell back to text."""
    cases = {
        "finite": (Stack(), X),
        "forward": (Stack(fault_at=2, fault="log"), X),
        "backward": (Stack(fault_at=4, fault="sqrt"), jnp.zeros((4, 8))),
        "input": (Stack(), X.at[1, 2].set(jnp.nan)),
    }
    for direction, (model, x) in cases.items():
        view = NonfiniteView(nnx_lab.find_nonfinite(mse, model, x, jnp.zeros((4, 1))))
        assert view.report["direction"] == direction
