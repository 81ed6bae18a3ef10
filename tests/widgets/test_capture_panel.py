"""The capture panel, without a browser: calling the model through it, the toggles as the browser
sends them (validated, answered with the controls trait), gradients, two panels, bad input, and
the saved-notebook fallback."""

from __future__ import annotations

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab.core import capture as core
from nnx_lab.core.capture import NoPerturbations
from nnx_lab.core.graph import path_text
from nnx_lab.widgets.capture import STATIC, CapturePanel, capture_panel

pytestmark = pytest.mark.needs_flax("nnx.capture")

EVIL = "<img src=x onerror=alert(1)>"


class Activation(nnx.Intermediate):
    """A user's own Intermediate subclass."""


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 4, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "act", h)
        self.sow(Activation, "pre", h * 2)
        h = self.perturb("pert", h)
        return jax.nn.relu(h)


class Net(nnx.Module):
    def __init__(self, rngs):
        self.b0 = Block(rngs)
        self.head = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x):
        h = self.b0(x)
        self.sow(nnx.Intermediate, EVIL, h)
        return self.head(h)


X = jnp.arange(6.0).reshape(2, 3) / 6


@pytest.fixture
def model():
    return Net(nnx.Rngs(0))


def paths(state) -> list[str]:
    return sorted(path_text(p) for p, _ in nnx.to_flat_state(state))


def row_paths(payload: dict) -> list[str]:
    """Path text of every row of a snapshot payload (what the browser computes)."""
    nodes, rows = payload["nodes"], payload["rows"]
    node_paths: list[tuple] = []
    for parent, key in zip(nodes["parent"], nodes["key"]):
        node_paths.append((*(node_paths[parent] if parent >= 0 else ()), key))
    return [path_text((*(node_paths[p] if p >= 0 else ()), k)) for p, k in zip(rows["parent"], rows["key"])]


def send(panel, content):
    """What the browser's model.send does: the widget's message handler gets the content."""
    panel._on_message(panel, content, [])


def bundle_data(widget):
    bundle = widget._repr_mimebundle_()
    return bundle[0] if isinstance(bundle, tuple) else bundle


# -- calling the model -----------------------------------------------------------------------------


def test_call_returns_the_result_and_shows_what_was_captured(model):
    expected = model(X)
    panel = capture_panel(model, display=False)
    assert panel.captured is None and panel.report == {}
    assert panel.status["calls"] == 0 and panel.status["target"] == "Net"

    before = frozen(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "sow outside nnx.capture" deprecation: the panel captures
        y = panel(X)
    np.testing.assert_allclose(y, expected)
    assert_unchanged(model, before)
    assert not hasattr(model, "__captures__") and not hasattr(model.b0, "__captures__")

    assert paths(panel.captured) == [f"[{EVIL!r}]", "b0.act"]
    np.testing.assert_allclose(panel.captured["b0"]["act"].get_value()[0], model.b0.linear(X), rtol=1e-6)
    payload = panel.report
    assert json.loads(json.dumps(payload)) == payload  # plain JSON, as the browser gets it
    assert sorted(row_paths(payload["snapshot"])) == [f"[{EVIL!r}][0]", "b0.act[0]"]
    hist = payload["hist"]
    assert hist["bins"] == 16 and len(hist["rows"]) == 2
    assert all(sum(r[2:]) == 8 for r in hist["rows"])  # every value of a (2, 4) array in some bin
    # Container nodes carry the class of the module at their path; the sow groups carry nothing.
    nodes = payload["snapshot"]["nodes"]
    assert dict(zip(nodes["key"], nodes["type"])) == {"b0": "Block", "act": "", EVIL: ""}
    assert payload["snapshot"]["root_type"] == "Net"
    assert payload["grads"] is None
    assert payload["types"] == ["Intermediate"]
    assert payload["seen"] == ["Intermediate", "Activation", "Perturbation"]
    assert any("Activation" in m for m in payload["messages"])  # sown but not chosen, said so
    assert panel.status["calls"] == 1 and panel.status["kind"] == "call" and panel.status["elapsed_ms"] > 0


def test_run_captures_a_jitted_function_of_the_model(model):
    panel = capture_panel(model, display=False)

    @nnx.jit
    def forward(m, x):
        return m(x) * 2

    y = panel.run(forward, model, X)
    np.testing.assert_allclose(y, model(X) * 2, rtol=1e-6)
    assert paths(panel.captured) == [f"[{EVIL!r}]", "b0.act"]
    np.testing.assert_allclose(panel.captured["b0"]["act"].get_value()[0], model.b0.linear(X), rtol=1e-6)
    assert panel.report["snapshot"]["tables"]["status"] == ["ok"]  # live arrays, not tracers
    assert panel.status["calls"] == 1
    with pytest.raises(TypeError, match="needs a function to call, got int"):
        panel.run(3)
    assert panel.status["calls"] == 1


def test_types_seen_in_a_call_become_toggles(model):
    panel = capture_panel(model, display=False)
    names = lambda: [t["name"] for t in panel.controls["types"]]  # noqa: E731
    assert names() == ["Intermediate", "Perturbation"]
    panel(X)
    assert names() == ["Intermediate", "Perturbation", "Activation"]
    activation = next(t for t in panel.controls["types"] if t["name"] == "Activation")
    assert activation["on"] is False and activation["title"].endswith("Activation")
    send(panel, {"type": "type", "name": "Activation", "on": True})
    assert panel.types == (nnx.Intermediate, Activation)
    panel(X)
    assert paths(panel.captured) == [f"[{EVIL!r}]", "b0.act", "b0.pre"]
    assert type(panel.captured["b0"]["pre"]) is Activation


def test_method_outputs_toggle_adds_rows_on_the_next_call(model):
    panel = capture_panel(model, display=False)
    panel(X)
    assert panel.controls["methods"] is False
    rev = panel.controls["rev"]
    send(panel, {"type": "methods", "on": True})
    assert panel.controls["methods"] is True and panel.methods is True
    assert panel.controls["rev"] > rev
    assert panel.controls["pending"] is True  # shown until the next call
    panel(X)
    assert panel.controls["pending"] is False
    assert paths(panel.captured) == [
        f"[{EVIL!r}]",
        "__call__",
        "b0.__call__",
        "b0.act",
        "b0.linear.__call__",
        "head.__call__",
    ]
    np.testing.assert_allclose(panel.captured["__call__"].get_value()[0], model(X), rtol=1e-6)
    send(panel, {"type": "methods", "on": False})
    panel(X)
    assert paths(panel.captured) == [f"[{EVIL!r}]", "b0.act"]
    assert core.patched_classes() == {}


def test_perturbation_type_toggle(model):
    panel = capture_panel(model, display=False)
    send(panel, {"type": "type", "name": "Perturbation", "on": True})
    send(panel, {"type": "type", "name": "Intermediate", "on": False})
    assert panel.types == (nnx.Perturbation,)
    panel(X)
    assert paths(panel.captured) == ["b0.pert"]


def test_module_checkboxes_cascade_and_become_only(model):
    panel = capture_panel(model, display=False)
    modules = panel.controls["modules"]
    assert [(m["path"], m["parent"], m["cls"]) for m in modules] == [
        ("", -1, "Net"),
        ("b0", 0, "Block"),
        ("b0.linear", 1, "Linear"),
        ("head", 0, "Linear"),
    ]
    assert all(m["on"] for m in modules)

    send(panel, {"type": "module", "path": "b0", "on": False})  # b0 and everything under it
    on = {m["path"]: m["on"] for m in panel.controls["modules"]}
    assert on == {"": True, "b0": False, "b0.linear": False, "head": True}
    assert panel.modules == ("", "head")
    panel(X)
    assert paths(panel.captured) == [f"[{EVIL!r}]"]

    send(panel, {"type": "modules", "on": False})
    send(panel, {"type": "module", "path": "b0", "on": True})
    send(panel, {"type": "module", "path": "b0.linear", "on": False})
    send(panel, {"type": "methods", "on": True})
    panel(X)
    assert paths(panel.captured) == ["b0.__call__", "b0.act"]  # b0's own values, nothing else

    panel.modules = ["b0.linear"]
    panel(X)
    assert paths(panel.captured) == ["b0.linear.__call__"]
    send(panel, {"type": "modules", "on": True})
    assert panel.modules == ("", "b0", "b0.linear", "head")
    # From Python, as with the magic's --only PATH: the module and everything under it.
    for spec in ("b0", "b0/", ("b0",), ["b0"], [("b0",)]):
        panel.modules = "head"
        panel.modules = spec if spec != "b0/" else "b0"
        assert panel.modules == ("b0", "b0.linear"), spec
    panel.modules = ["", "head"]
    assert panel.modules == ("", "b0", "b0.linear", "head")  # "" is the model: everything


def test_grads_show_gradient_statistics_next_to_forward_values(model):
    panel = capture_panel(model, display=False)
    before = frozen(model)
    result = panel.grads(lambda m, x: m(x).sum(), X)
    assert_unchanged(model, before)

    # The gradient at the perturbation, checked against jax.grad of the same function.
    h = model.b0.linear(X)
    g = jax.grad(lambda h: model.head(jax.nn.relu(h)).sum())(h)
    np.testing.assert_allclose(result.grads["b0"]["pert"].get_value(), g, rtol=1e-6)
    np.testing.assert_allclose(result.loss, model(X).sum(), rtol=1e-6)
    assert panel.captured is result.forward and panel.gradients is result.grads

    payload = panel.report
    assert json.loads(json.dumps(payload)) == payload
    grads = payload["grads"]
    assert row_paths(grads["snapshot"]) == ["b0.pert"]
    assert len(grads["hist"]["rows"]) == 1 and sum(grads["hist"]["rows"][0][2:]) == 8
    mean = grads["snapshot"]["stats"]["mean"][0]
    assert mean == pytest.approx(float(np.mean(g)), rel=1e-3)
    assert panel.status["kind"] == "grads" and panel.status["loss"] == pytest.approx(float(model(X).sum()), rel=1e-5)

    # A plain call afterwards drops the gradients.
    panel(X)
    assert panel.report["grads"] is None and panel.gradients is None and panel.status["loss"] is None


@pytest.mark.parametrize("scale, shown", [(jnp.nan, "NaN"), (jnp.inf, "inf")])
def test_a_nonfinite_loss_reaches_the_browser_as_text(model, scale, shown):
    # JSON has no NaN: jupyter_client's packer sends a NaN float as the string "nan", which the
    # panel's header (it shows a number) dropped: the loss vanished just when it went bad.
    from jupyter_client.session import json_packer, json_unpacker

    panel = capture_panel(model, display=False)
    before = frozen(model)
    panel.grads(lambda m, x: m(x).sum() * 0 + scale, X)
    assert_unchanged(model, before)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # jupyter_client warns of a message that is not JSON
        sent = json_unpacker(json_packer(panel.status))
    assert sent["kind"] == "grads" and sent["loss"] is None and sent["loss_text"] == shown
    panel.grads(lambda m, x: m(x).sum(), X)  # a finite loss again: the number and its text
    assert panel.status["loss"] == pytest.approx(float(model(X).sum()), rel=1e-5)
    assert panel.status["loss_text"] == nnx_lab.core.render.format_number(panel.status["loss"])
    panel(X)
    assert panel.status["kind"] == "call" and panel.status["loss_text"] == ""


def test_grads_follow_the_module_toggles(model):
    panel = capture_panel(model, display=False)
    send(panel, {"type": "module", "path": "b0", "on": False})  # the only module that perturbs
    with pytest.raises(NoPerturbations):
        panel.grads(lambda m, x: m(x).sum(), X)
    assert panel.status["level"] == "error" and "perturb" in panel.status["message"]


# -- the browser's messages are validated ----------------------------------------------------------


@pytest.mark.parametrize(
    "content, error",
    [
        ({"type": "type", "name": "Nope", "on": True}, "unknown Variable type 'Nope'"),
        ({"type": "type", "name": "Intermediate", "on": False}, "keep at least one Variable type"),
        ({"type": "type", "name": "Perturbation", "on": "yes"}, "'on' must be true or false"),
        ({"type": "methods", "on": 1}, "'on' must be true or false"),
        ({"type": "module", "path": "nowhere", "on": False}, "no submodule at 'nowhere'"),
        ({"type": "module", "path": ["b0"], "on": False}, "no submodule at ['b0']"),
        ({"type": "eval", "code": "1/0"}, "unknown message"),
        ("not a dict", "message must be an object, not str"),
    ],
)
def test_bad_messages_change_nothing_and_are_answered(model, content, error):
    panel = capture_panel(model, display=False)
    before = dict(panel.controls)
    send(panel, content)
    after = dict(panel.controls)
    assert after["rev"] > before["rev"]  # answered: the browser redraws and undoes the click
    assert {k: v for k, v in after.items() if k != "rev"} == {k: v for k, v in before.items() if k != "rev"}
    assert panel.status["level"] == "error"
    assert error in panel.status["message"] and "\n" not in panel.status["message"]
    send(panel, {"type": "methods", "on": True})  # a good message clears the error
    assert panel.status["message"] == "" and panel.status["level"] == ""


def test_python_setters_validate(model):
    panel = capture_panel(model, display=False)
    with pytest.raises(ValueError, match="no submodule at 'nope'"):
        panel.modules = ["b0", "nope"]
    assert panel.modules == ("", "b0", "b0.linear", "head")
    with pytest.raises(TypeError, match="methods must be True or False"):
        panel.methods = "yes"
    assert panel.methods is False
    with pytest.raises(TypeError, match="not an nnx.Variable type"):
        panel.types = "Linear"
    with pytest.raises(ValueError, match="unknown Variable type"):
        panel.types = "Nope"
    assert panel.types == (nnx.Intermediate,)
    panel.types = [nnx.Perturbation, Activation]
    assert panel.types == (nnx.Perturbation, Activation)
    assert [t["name"] for t in panel.controls["types"] if t["on"]] == ["Perturbation", "Activation"]


def test_no_module_ticked_is_an_error_and_the_model_is_not_called(model):
    panel = capture_panel(model, display=False)
    send(panel, {"type": "modules", "on": False})
    calls = []
    model.__class__ = type("Counting", (Net,), {"__call__": lambda self, x: calls.append(x) or Net.__call__(self, x)})
    with pytest.raises(ValueError, match="no submodule is ticked"):
        panel(X)
    assert calls == [] and panel.captured is None


def test_bad_arguments():
    with pytest.raises(TypeError, match="needs an nnx.Module, got int"):
        capture_panel(3, display=False)
    model = Net(nnx.Rngs(0))
    with pytest.raises(TypeError, match="not an nnx.Variable type"):
        capture_panel(model, types=nnx.Linear, display=False)
    with pytest.raises(ValueError, match="unknown Variable type 'Nope'"):
        capture_panel(model, types="Intermediate, Nope", display=False)
    with pytest.raises(TypeError, match="methods must be True or False"):
        capture_panel(model, methods="yes", display=False)
    panel = capture_panel(model, types="Intermediate, Perturbation", methods=True, display=False)
    assert panel.types == (nnx.Intermediate, nnx.Perturbation) and panel.methods is True


def test_type_names_are_looked_up_where_the_panel_is_made(model):
    class Local(nnx.Intermediate):
        pass

    panel = capture_panel(model, types="Activation, Local", display=False)  # a global and a local
    assert panel.types == (Activation, Local)
    panel.types = "Local"
    assert panel.types == (Local,)
    assert [t["name"] for t in panel.controls["types"]] == ["Intermediate", "Perturbation", "Activation", "Local"]
    panel(X)
    assert any("nothing was sown under Local" in m for m in panel.report["messages"])


def test_a_call_that_raises_leaves_the_model_and_classes_as_they_were(model):
    panel = capture_panel(model, methods=True, display=False)
    before = frozen(model)
    with pytest.raises(TypeError):
        panel(jnp.ones((2, 5)))  # wrong width: the Linear raises inside the call
    assert_unchanged(model, before)
    assert core.patched_classes() == {}
    assert not any(hasattr(m, "__captures__") for _, m in nnx.iter_modules(model))
    assert panel.status["level"] == "error" and panel.status["message"].startswith("the call failed: TypeError")
    assert panel.captured is None
    panel(X)  # and the panel still works
    assert panel.status["level"] == "" and panel.status["calls"] == 1


# -- two panels -------------------------------------------------------------------------------------


def test_two_panels_on_two_models_do_not_interfere():
    a, b = Net(nnx.Rngs(0)), Net(nnx.Rngs(1))
    pa, pb = capture_panel(a, display=False), capture_panel(b, display=False)
    send(pa, {"type": "methods", "on": True})
    send(pa, {"type": "module", "path": "head", "on": False})
    assert pb.controls["methods"] is False and all(m["on"] for m in pb.controls["modules"])
    pa(X)
    pb(X)
    assert "__call__" in paths(pa.captured) and "head.__call__" not in paths(pa.captured)
    assert paths(pb.captured) == [f"[{EVIL!r}]", "b0.act"]
    np.testing.assert_allclose(pb.captured["b0"]["act"].get_value()[0], b.b0.linear(X), rtol=1e-6)
    # a's panel ran a; b's values are b's own.
    assert not np.allclose(pa.captured["b0"]["act"].get_value()[0], pb.captured["b0"]["act"].get_value()[0])
    assert pa.status["calls"] == 1 and pb.status["calls"] == 1
    # A call of b's panel inside nothing of a's: a's captured State stays what a captured.
    kept = pa.captured
    pb(X)
    assert pa.captured is kept
    assert core.patched_classes() == {}


# -- what a saved notebook shows -------------------------------------------------------------------


def test_static_fallback_is_escaped_text(model):
    panel = capture_panel(model, display=False)
    data = bundle_data(panel)
    assert data["text/plain"] == "CapturePanel · Net · collects Intermediate · no call yet"
    assert "no call yet" in data["text/html"] and "<img" not in data["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in data
    panel(X)
    data = bundle_data(panel)
    assert data["text/plain"] == panel.last_report.to_text()
    assert EVIL in data["text/plain"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in data["text/html"] and "<img" not in data["text/html"]
    assert repr(panel) == "CapturePanel · Net · collects Intermediate · 1 call · 2 captured"


def test_a_panel_shown_before_its_first_call_saves_that_call(model, ip, monkeypatch):
    # panel = capture_panel(model); panel(x); panel -- in one cell: the trailing `panel` draws
    # nothing more, so the output shown before the call is what the saved notebook keeps
    panel = capture_panel(model)
    assert panel._display_handle is not None
    assert "no call yet" in bundle_data(panel)["text/plain"]
    saved = []
    monkeypatch.setattr(panel, "_update_display", lambda: saved.append(bundle_data(panel)["text/plain"]))
    panel(X)
    assert saved == [panel.last_report.to_text()]  # the saved copy is the call's report, not "no call yet"
    panel(X)
    assert len(saved) == 1  # once: a later cell ending with `panel` saves a later call


def test_close_lets_go_of_the_captured_arrays(model):
    import gc
    import weakref

    panel = capture_panel(model, display=False)
    panel(X)
    ref = weakref.ref(panel.captured["b0"]["act"].get_value()[0])
    gc.collect()
    assert ref() is not None  # the panel holds what it captured...
    panel.close()
    gc.collect()
    assert ref() is None and panel.captured is None  # ...until it is closed


def test_the_panel_does_not_keep_the_model_alive():
    import gc
    import weakref

    model = Net(nnx.Rngs(0))
    kernel = weakref.ref(model.b0.linear.kernel.get_value())
    panel = capture_panel(model, display=False)
    panel(X)
    captured_before = paths(panel.captured)
    del model
    gc.collect()
    assert kernel() is None  # `del model` frees its arrays while the panel is on screen
    panel._after_cell()  # the cell that deleted it ends: the panel says so before anything is clicked
    assert panel.status["message"] == "the model is gone (deleted or garbage-collected)"
    assert panel.status["level"] == "error" and "(gone)" in repr(panel)
    with pytest.raises(ReferenceError, match="the model is gone"):
        panel(X)
    with pytest.raises(ReferenceError, match="the model is gone"):
        panel.model
    send(panel, {"type": "methods", "on": True})  # a click on a gone panel: answered, no traceback
    assert panel.controls["methods"] is True and [m["path"] for m in panel.controls["modules"]][:2] == ["", "b0"]
    assert panel.status["message"] == "the model is gone (deleted or garbage-collected)"
    assert paths(panel.captured) == captured_before  # the last values captured stay to look at


def test_public_names_and_bundle():
    assert nnx_lab.capture_panel is capture_panel and nnx_lab.CapturePanel is CapturePanel
    assert "capture_panel" in nnx_lab.__all__
    bundle = (STATIC / "capture.js").read_text()  # built by `npm run build` (hatch_build.py)
    assert "nnx-lab-capture" in bundle and "innerHTML" not in bundle
    assert str(CapturePanel._esm) == bundle


# -- in a training loop (its throttled descriptions: tests/widgets/test_capture_describing.py) --------


def test_max_rate_and_budget_must_be_positive(model):
    for bad in ({"max_rate": 0}, {"budget": -1}, {"max_rate": "fast"}):
        with pytest.raises(ValueError, match=r"must be a number in \(0, "):
            capture_panel(model, display=False, **bad)
