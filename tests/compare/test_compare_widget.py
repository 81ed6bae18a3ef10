"""The comparison widget: its payload (a tree of modules over the rows), its saved-notebook copies,
and where a Comparison shows it (a Jupyter kernel) or stays text (a terminal, %nnx_compare there)."""

from __future__ import annotations

import json

import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.compare import comparison_payload
from nnx_lab.widgets import compare as compare_widget
from nnx_lab.widgets.compare import ComparisonView

HOSTILE = "<img src=x onerror=alert(1)>"


class Net(nnx.Module):
    def __init__(self, width: int = 3, seed: int = 0):
        rngs = nnx.Rngs(seed)
        self.enc = nnx.Linear(2, width, rngs=rngs)
        self.dec = nnx.Linear(width, 2, rngs=rngs)


def test_payload_is_a_tree_of_modules_over_the_rows():
    a, b = Net(), Net()
    b.dec.kernel[...] = b.dec.kernel[...] * 1.5
    cmp = nnx_lab.compare(a, b)
    p = comparison_payload(cmp)
    json.dumps(p, allow_nan=False)  # plain JSON, no NaN/inf
    assert p["verdict"] == cmp.verdict and p["loadable"] and not p["identical"]
    modules = {m["path"]: m for m in p["modules"]}
    assert set(modules) == {"enc", "dec"} and modules["dec"]["changed"] == 1 and modules["enc"]["identical"]
    rows = {r["path"]: r for r in p["rows"]}
    kernel = rows["dec.kernel"]
    assert p["modules"][kernel["module"]]["path"] == "dec" and kernel["key"] == "kernel"
    assert kernel["status"] == "changed" and kernel["rel_change"] == pytest.approx(0.5, rel=1e-5)
    assert kernel["cosine"] == pytest.approx(1.0) and kernel["identical"] is False
    assert rows["enc.bias"]["identical"] is True and rows["enc.bias"]["rel_change"] == 0


def test_a_change_from_all_zeros_says_inf_as_the_text_table_does():
    # every bias of flax's translation Transformer starts at zeros: its relative change is infinite,
    # which JSON cannot carry, so the widget's cell was blank beside 'changed'
    a, b = Net(), Net()
    b.dec.bias[...] = b.dec.bias[...] + 0.25
    cmp = nnx_lab.compare(a, b)
    p = comparison_payload(cmp)
    json.dumps(p, allow_nan=False)
    bias = {r["path"]: r for r in p["rows"]}["dec.bias"]
    assert bias["status"] == "changed" and bias["rel_change"] is None
    assert bias["rel_change_text"] == "inf" and "inf" in str(cmp).splitlines()[2]  # the text table's word
    assert bias["rel_change_title"] == "\u2016a\u2212b\u2016/\u2016a\u2016 = inf: a is all zeros here"
    kernel = {r["path"]: r for r in p["rows"]}["dec.kernel"]
    assert kernel["rel_change_text"] is None and kernel["rel_change_title"] is None  # a number says itself


def test_structure_problems_are_rows_under_modules_without_aggregates():
    a, b = Net(width=3), Net(width=4)
    b.extra = nnx.Param(nnx.initializers.zeros(nnx.Rngs(0).params(), (2,)))
    p = comparison_payload(nnx_lab.compare(a, b))
    assert not p["loadable"]
    statuses = {r["path"]: r["status"] for r in p["rows"]}
    assert statuses["enc.kernel"] == "shape" and statuses["extra"] == "unexpected"
    shape_row = next(r for r in p["rows"] if r["path"] == "enc.kernel")
    assert shape_row["shape_a"] == [2, 3] and shape_row["shape_b"] == [2, 4]
    assert next(r for r in p["rows"] if r["path"] == "extra")["module"] == -1


def test_the_module_tree_keeps_quoted_keys_whole():
    import jax.numpy as jnp

    state = {
        "blocks": {0: {"attn": {"kernel": jnp.ones(2)}}},
        "d": {f"{HOSTILE}.x": {"w": jnp.ones(2)}},
        "kernel": jnp.ones(2),
    }
    p = comparison_payload(nnx_lab.compare(state, state))
    modules = [m["path"] for m in p["modules"]]
    assert modules == ["blocks", "blocks[0]", "blocks[0].attn", "d", f"d['{HOSTILE}.x']"]
    rows = [(r["path"], r["key"], r["depth"], modules[r["module"]] if r["module"] >= 0 else None) for r in p["rows"]]
    assert rows == [
        ("blocks[0].attn.kernel", "kernel", 3, "blocks[0].attn"),
        (f"d['{HOSTILE}.x'].w", "w", 2, f"d['{HOSTILE}.x']"),  # the dot inside the quoted key splits nothing
        ("kernel", "kernel", 0, None),
    ]


def test_widget_holds_the_payload_and_the_static_copies():
    a, b = Net(), Net(seed=1)
    cmp = nnx_lab.compare({"w": a.enc.kernel, HOSTILE: a.dec.bias}, {"w": b.enc.kernel, HOSTILE: b.dec.bias})
    view = ComparisonView(cmp)
    assert view.comparison["rows"][0]["path"] in ("w", f"[{HOSTILE!r}]")
    bundle = view._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("dict vs dict: b loads into a")
    assert HOSTILE not in data["text/html"] and "&lt;img" in data["text/html"]  # escaped in the saved copy
    assert repr(view) == f"ComparisonView · {cmp.verdict}"
    with pytest.raises(TypeError, match="shows a Comparison"):
        ComparisonView("not a comparison")
    view.close()


def test_a_comparison_shows_the_widget_only_in_a_kernel(monkeypatch):
    cmp = nnx_lab.compare(Net(), Net())
    assert compare_widget.widgets_work() is False  # pytest: no kernel
    assert cmp._repr_mimebundle_() is None  # IPython then shows the text table and the static HTML
    monkeypatch.setattr(compare_widget, "widgets_work", lambda: True)
    data = cmp._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and data["text/plain"] == cmp.to_text()


def test_nnx_compare_magic_without_a_kernel_stays_text(ip, capsys):
    ip.user_ns.update(a=Net(), b=Net(seed=1))
    ip.run_line_magic("nnx_compare", "a b")
    out = capsys.readouterr().out
    assert "Net vs Net: b loads into a" in out and "widget" not in out.lower()
