"""The summary widget without a browser (its trait, the saved-notebook fallbacks, the peak memory
computed lazily or on a thread) and Summary.to_pandas."""

import json
import threading

import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_lab.core.summary import summary
from nnx_lab.widgets.summary import SummaryView, payload

from . import models as zoo

EVIL = "<script>alert(1)</script>"
#: what the memory line says while XLA's memory analysis still compiles
PENDING = "computing (XLA's memory analysis compiles the whole program once)"


class Evil(nnx.Module):
    def __init__(self):
        self.d = nnx.data({EVIL: nnx.Linear(2, 3, rngs=nnx.Rngs(0))})  # a plain dict: flax 0.11 has no nnx.Dict

    def __call__(self, x):
        return self.d[EVIL](x)


def test_summary_compiles_only_when_memory_is_asked_for():
    s = summary(*zoo.model("mlp"))
    assert not s.peak.ready and s.peak.seconds is None  # summary() itself compiles nothing
    assert any(PENDING in line for line in s.header_lines(wait=False))
    assert s.memory["peak"] > 0 and s.memory_note is None and s.peak.ready and s.peak.seconds > 0
    assert "Peak memory per device" in str(s) and PENDING not in str(s)
    off = summary(*zoo.model("mlp"), memory=False)
    assert off.memory is None and off.memory_note.startswith("not computed")


def test_payload_is_plain_json_with_texts_and_sort_values():
    s = summary(*zoo.model("block"), memory=False, grad=True)
    data = payload(s)
    assert json.loads(json.dumps(data)) == data
    assert data["total_flops"] == s.flops and data["backward"] is True
    assert [r["path_text"] for r in data["rows"]][:3] == ["(Block)", "ln1", "attn"]
    attn = data["rows"][2]
    assert attn["flops"] == s["attn"].flops and attn["depth"] == 1 and attn["cls"] == "MultiHeadAttention"
    assert attn["params"] == sum(c for c, _ in s["attn"].params_total.values())
    assert data["title"].startswith("Block.__call__") and any(line.startswith("FLOPs") for line in data["header"])


def test_the_params_cell_counts_parameters_and_its_tooltip_lists_every_variable_type():
    data = payload(summary(*zoo.model("cnn"), memory=False))
    rows = {r["path_text"]: r for r in data["rows"]}
    assert (rows["bn1"]["params"], rows["bn1"]["params_text"]) == (16, "16 (64 B)")
    assert rows["bn1"]["params_title"] == "Param 16 (64 B), BatchStat 16 (64 B)"
    assert (rows["drop"]["params"], rows["drop"]["params_text"]) == (0, "")
    assert rows["drop"]["params_title"].startswith("Rng")


def test_fallbacks_escape_user_strings_and_wait_for_nothing():
    s = summary(Evil(), jnp.ones((1, 2)))
    view = SummaryView(s)
    bundle = view._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert EVIL in data["text/plain"] and EVIL not in data["text/html"] and "&lt;script&gt;" in data["text/html"]
    assert PENDING in data["text/plain"] and not s.peak.ready  # displaying never waited for the compile
    assert any(EVIL in r["path_text"] for r in view.summary["rows"])  # the front end sets it as text


def test_shown_widget_gets_peak_memory_from_a_thread(monkeypatch):
    import nnx_lab.widgets.summary as module

    monkeypatch.setattr(module, "background_unsupported", lambda: None)
    s = summary(*zoo.model("mlp"))
    view = SummaryView(s)
    done = threading.Event()
    updates = []
    monkeypatch.setattr(view, "_update_display", lambda: (updates.append(view.summary["header"]), done.set()))
    view.show()
    assert done.wait(120), "the peak memory never arrived"
    assert any(line.startswith("Peak memory per device") for line in updates[-1])
    assert not any(PENDING in line for line in view.summary["header"])
    assert PENDING not in view._fallback()[1]


def test_without_thread_updates_the_memory_comes_after_the_cell(monkeypatch):
    import nnx_lab.widgets.summary as module

    monkeypatch.setattr(module, "background_unsupported", lambda: "Colab")
    s = summary(*zoo.model("mlp"))
    view = SummaryView(s)
    view.show()
    assert not s.peak.ready
    view._after_cell()
    assert s.peak.ready and any(line.startswith("Peak memory per device") for line in view.summary["header"])


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    s = summary(*zoo.model("cnn"), memory=False)
    frame = s.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(s.rows)
    assert list(frame["path"]) == [r.path for r in s.rows]
    assert int(frame["flops"].iloc[0]) == s.flops
    assert int(frame.loc[frame["path"] == "conv1", "params"].iloc[0]) == 3 * 3 * 1 * 8 + 8
    assert frame["flops"].sort_values(ascending=False).index[0] == 0  # the model's row costs the most


def test_ipython_display_is_the_widget_only_in_a_kernel(monkeypatch):
    import nnx_lab
    import nnx_lab.widgets.summary as module

    s = nnx_lab.summary(*zoo.model("mlp"), memory=False)
    assert s._ipython_display_ is None  # no kernel here: IPython shows _repr_html_ / text
    shown = []
    monkeypatch.setattr(module, "in_kernel", lambda: True)
    monkeypatch.setattr(module, "display_summary", shown.append)
    s._ipython_display_()
    assert shown == [s]
