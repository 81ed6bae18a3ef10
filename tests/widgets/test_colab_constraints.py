"""What Colab's front end and other widget hosts allow, designed for (issue: Colab).

- Colab's widget manager drops binary buffers from a widget's *initial* state
  (googlecolab/colab-cdn-widget-manager#33): no widget may put one there.
- VS Code, GitHub and nbviewer do not keep widget state: a saved notebook shows each widget's
  text/html fallback, so every display must carry it, on ipywidgets 7 (Colab) as on 8.
- Colab's kernel has no subshells: a click during a running cell waits for the cell to end, and the
  panel says so on screen.
- Display updates from threads may not arrive there: background refresh says when it falls back.
"""

from __future__ import annotations

import json
import pathlib
import sys

import anywidget
import jax.numpy as jnp
import pytest
from flax import nnx
from IPython.core.interactiveshell import InteractiveShell
from ipywidgets.widgets.widget import _remove_buffers

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.widgets import capture_report, split, views

ROOT = pathlib.Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


_alive = []  # the widgets hold their models weakly


def model():
    m = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    _alive.append(m)
    return m


def _capture_report_view():
    from nnx_lab.core.capture import capture_call
    from nnx_lab.core.capture import capture_report as report

    m = model()
    _, captured = capture_call(m, lambda: m(jnp.ones((1, 2))), methods=True)
    return capture_report.CaptureReportView(report(captured))


def _capture_panel():
    from nnx_lab.widgets.capture import capture_panel

    return capture_panel(model(), display=False)


def _checkpoint_viewer():
    import tempfile

    import orbax.checkpoint as ocp

    path = pathlib.Path(tempfile.mkdtemp(prefix="nnx_lab-ckpt-")) / "ckpt"
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(path, nnx.state(model()))
    checkpointer.wait_until_finished()
    return nnx_lab.watch(path, display=False)


def _comparison_view():
    from nnx_lab.widgets.compare import ComparisonView

    a = model()
    b = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(1)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    return ComparisonView(nnx_lab.compare(a, b))


def _summary_view():
    from nnx_lab.widgets.summary import SummaryView

    return SummaryView(nnx_lab.summary(model(), jnp.ones((1, 2))))


def _memory_view():
    from nnx_lab.widgets.memory import MemoryView

    m = model()
    return MemoryView(nnx_lab.memory(namespace={"model": m}))


def _nonfinite_view():
    from nnx_lab.widgets.nonfinite import NonfiniteView

    m = model()
    return NonfiniteView(nnx_lab.find_nonfinite(lambda m, x: m(jnp.log(x)).sum(), m, -jnp.ones((1, 2))))


#: one way to make each widget class, and the flax feature it needs
MAKERS = {
    "NonfiniteView": (_nonfinite_view, None),
    "MemoryView": (_memory_view, None),
    "CheckpointViewer": (_checkpoint_viewer, None),
    "ComparisonView": (_comparison_view, None),
    "SummaryView": (_summary_view, None),
    "StateViewer": (lambda: nnx_lab.watch(model(), display=False), None),
    "SplitReportView": (lambda: split.SplitReportView(nnx_lab.split_report(model(), nnx.Param, ...)), None),
    "ViewPanel": (lambda: views.mode_toggle(model(), display=False), None),
    "CapturePanel": (_capture_panel, "nnx.capture"),
    "CaptureReportView": (_capture_report_view, "nnx.capture"),
}


def _widget_classes() -> set[str]:
    found, todo = set(), [anywidget.AnyWidget]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("nnx_lab.") and "_esm" in vars(sub):  # not the shared base
                found.add(sub.__name__)
    return found


def make(name):
    build, feature = MAKERS[name]
    if feature and compat.missing(feature):
        pytest.skip(compat.missing(feature))
    return build()


def test_every_widget_class_is_checked_here():
    import importlib
    import pkgutil

    import nnx_lab.widgets

    for module in pkgutil.iter_modules(nnx_lab.widgets.__path__, "nnx_lab.widgets."):
        importlib.import_module(module.name)  # every widget module, whatever this test imported before

    assert _widget_classes() == set(MAKERS)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_no_binary_buffer_in_a_widgets_initial_state(name):
    widget = make(name)
    _, _, buffers = _remove_buffers(widget.get_state())  # what comm_open carries
    assert buffers == []


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_display_carries_the_static_fallback(name):
    widget = make(name)
    data, _ = InteractiveShell.instance().display_formatter.format(widget)
    assert {WIDGET_VIEW, "text/html", "text/plain"} <= set(data)
    assert data["text/html"].strip()


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_saved_tutorials_show_the_fallback_where_widget_state_is_not_kept(notebook):
    nb = json.loads(notebook.read_text())
    widget_outputs = [
        o
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if WIDGET_VIEW in o.get("data", {})
    ]
    assert all(o["data"].get("text/html") for o in widget_outputs)


def test_background_refresh_says_when_it_falls_back_on_colab(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    monkeypatch.setitem(sys.modules, "ipykernel", sys.modules.get("ipykernel") or type(sys)("ipykernel"))
    v = nnx_lab.watch(model(), background=True, display=False)
    try:
        assert "background refresh unavailable" in v.status["message"]
        assert "Colab" in v.status["message"]
    finally:
        v.close()


def test_in_colab_the_first_widget_enables_colabs_custom_widget_manager(monkeypatch):
    """Colab shows third-party widgets only after google.colab.output.enable_custom_widget_manager():
    anywidget calls it when the first widget is made, so neither %load_ext nnx_lab nor the user has to
    (docs/colab.md says so). Simulated: a google.colab.output that counts the calls."""
    import types

    calls = []
    output = types.ModuleType("google.colab.output")
    output.enable_custom_widget_manager = lambda *a, **k: calls.append(a)
    output._widgets = types.SimpleNamespace(_installed_url=None)
    monkeypatch.setitem(sys.modules, "google.colab.output", output)
    import anywidget._util as anywidget_util

    if hasattr(anywidget_util.enable_custom_widget_manager_once, "cache_clear"):
        anywidget_util.enable_custom_widget_manager_once.cache_clear()
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    try:
        nnx_lab.watch(nnx.Linear(2, 2, rngs=nnx.Rngs(1)), display=False).close()
        assert len(calls) == 1, calls  # enabled once, when the first widget was made
    finally:
        viewer.close()
        if hasattr(anywidget_util.enable_custom_widget_manager_once, "cache_clear"):
            anywidget_util.enable_custom_widget_manager_once.cache_clear()
