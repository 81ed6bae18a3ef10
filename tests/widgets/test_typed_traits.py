"""Every synced dict trait is typed (nnx_lab/widgets/traits.py): a wrong payload is refused in Python at
assignment with a one-line error naming the widget, trait and key; every widget's real payloads are
what their TypedDicts say, all the way down, and declare every key they carry."""

from __future__ import annotations

import typing

import jax.numpy as jnp
import pytest
import traitlets
from flax import nnx
from test_colab_constraints import MAKERS, make, model

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.widgets.traits import problem


def undeclared(value: dict, schema: type) -> list[str]:
    """Keys of ``value`` (and of its nested TypedDicts) that ``schema`` does not declare."""
    hints = typing.get_type_hints(schema)
    out = [f"{schema.__name__}.{k}" for k in value.keys() - hints.keys()]
    for key, hint in hints.items():
        if typing.is_typeddict(hint) and isinstance(value.get(key), dict):
            out += undeclared(value[key], hint)
    return out


def payloads(widget) -> dict[str, tuple[dict, type]]:
    """name -> (value, TypedDict) of the widget's synced dict traits; every one must be typed."""
    out = {}
    for name, trait in widget.traits(sync=True).items():
        if isinstance(trait, traitlets.Dict):
            assert hasattr(trait, "schema"), f"{type(widget).__name__}.{name} is an untyped Dict trait"
            out[name] = (getattr(widget, name), trait.schema)
    return out


def assert_typed(widget) -> int:
    checked = 0
    for name, (value, schema) in payloads(widget).items():
        where = f"{type(widget).__name__}.{name}"
        assert problem(value, schema, deep=True) is None, (where, problem(value, schema, deep=True))
        assert undeclared(value, schema) == [], where
        checked += bool(value)
    return checked


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_widgets_payloads_are_typed_and_valid(name):
    assert assert_typed(make(name)) >= 1


def test_a_training_viewers_payloads_are_valid():
    from test_viewer_series import setup

    m, opt, step = setup()
    viewer = nnx_lab.watch(m, optimizer=opt, display=False)  # its optimizer state: the snapshot's series
    for _ in range(3):
        viewer.tick(loss=jnp.float32(1.0), grads=step())
    compat.set_value(m.layers[0].bias, jnp.full((4,), jnp.nan))  # the NaN/Inf alert
    viewer.refresh()
    viewer.watcher.wait()
    viewer.refresh()
    assert viewer.alert and viewer.snapshot.get("series")
    assert assert_typed(viewer) == 3
    viewer.close()


@pytest.mark.needs_flax("nnx.capture")
def test_a_capture_panels_payloads_after_calls_are_valid():
    from test_capture_panel import EVIL, Net, X

    from nnx_lab.widgets.capture import capture_panel

    m = Net(nnx.Rngs(0))  # sows (one name is markup), perturbs
    panel = capture_panel(m, display=False)
    panel(X)
    panel.grads(lambda m, x: m(x).sum(), X)
    assert EVIL in str(panel.report)
    assert panel.report["grads"] is not None
    assert assert_typed(panel) == 3
    panel.grads(lambda m, x: m(x).sum() * jnp.nan, X)  # a NaN loss: JSON has none, the payload says it as text
    assert panel.status["loss_text"] == "NaN"
    assert assert_typed(panel) == 3


def test_a_nonfinite_float_in_a_payload_is_refused_by_the_deep_check():
    # jupyter_client sends a NaN float as the string "nan": no widget's front end reads it as a number.
    from nnx_lab.widgets.traits import CaptureStatus

    status = {"target": "m", "message": "", "level": "", "kind": "grads", "loss": 1.5, "loss_text": "1.5"}
    assert problem(status, CaptureStatus, deep=True) is None
    assert problem({**status, "loss": float("nan")}, CaptureStatus, deep=True) == "'loss' is nan, not a finite number"
    assert problem({**status, "loss": float("-inf")}, CaptureStatus, deep=True) == "'loss' is -inf, not a finite number"
    assert problem({**status, "loss": "nan"}, CaptureStatus, deep=True) == "'loss' is str, not float | NoneType"


@pytest.mark.needs_flax("nnx.view")
def test_a_views_panel_whose_model_went_is_valid():
    from nnx_lab.widgets.views import ViewPanel

    m = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    namespace = {"model": m}
    panel = ViewPanel(m, namespace=namespace)
    assert_typed(panel)
    del m
    namespace.clear()
    import gc

    gc.collect()
    panel.refresh()
    assert panel.payload["gone"] is True
    assert_typed(panel)


def test_a_wrong_payload_is_refused_at_assignment_naming_the_trait_and_key():
    viewer = nnx_lab.watch(model(), display=False)
    before = dict(viewer.status)
    with pytest.raises(traitlets.TraitError) as missing:
        viewer.status = {"state": "live", "message": "", "last_refresh": None}
    assert str(missing.value) == "StateViewer.status: 'refreshes' missing (ViewerStatus)"
    with pytest.raises(traitlets.TraitError) as wrong:
        viewer.snapshot = {**viewer.snapshot, "refresh": "7"}
    assert str(wrong.value) == "StateViewer.snapshot: 'refresh' is str, not int"
    with pytest.raises(traitlets.TraitError, match=r"StateViewer.status: 'state' is 'running', not one of"):
        viewer.status = {**before, "state": "running"}
    with pytest.raises(traitlets.TraitError, match=r"StateViewer.alert: 'nan' is bool, not int"):
        viewer.alert = {**dict.fromkeys(("where", "source", "head", "tail"), ""), "step": 1, "refresh": 1,
                        "nan": True, "inf": 0, "outside": False, "now_variables": 0, "now_scalars": []}  # fmt: skip
    assert viewer.status == before  # nothing half-set
    viewer.alert = {}  # "no alert" passes
    viewer.close()
