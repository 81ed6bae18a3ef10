"""The mode report and view panels on modules flax's view guide writes, and on hostile ones."""

import re

import pytest
from flax import nnx
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab.core import compat

needs_view = pytest.mark.skipif(not compat.has("nnx.view"), reason=f"needs flax>={compat.needed('nnx.view')}")


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


class Getter(nnx.Module):
    @property
    def deterministic(self):
        raise RuntimeError("getter broke")

    def set_view(self, deterministic: bool | None = None):
        pass


class ReprValue(nnx.Module):
    def __init__(self):
        self.deterministic = None
        self.opt = BadRepr()

    def set_view(self, deterministic: bool | None = None, opt: "BadRepr" = BadRepr()):
        pass


class ReprAnnotation(nnx.Module):
    def __init__(self):
        self.opt = None

    def set_view(self, opt: BadRepr() = None):
        pass


@needs_view
@pytest.mark.parametrize(
    "cls, shown",
    [
        (Getter, "<getter raised RuntimeError: getter broke>"),
        (ReprValue, "<repr failed: RuntimeError>"),
        (ReprAnnotation, "opt: <repr failed: RuntimeError>"),
    ],
)
def test_raising_getters_and_reprs_are_shown_not_raised(ip, cls, shown):
    model = nnx.Sequential(cls(), nnx.Dropout(0.1))
    before = frozen(model)
    assert shown in nnx_lab.view_report(model).to_text()
    panel = nnx_lab.view_panel(model, display=False)
    assert panel.payload["summary"].startswith("Sequential: train")
    ip.user_ns["m"] = model
    ip.run_line_magic("nnx_mode", "m")
    ip.run_line_magic("nnx_view", "m")
    assert_unchanged(model, before)
    if cls is Getter:  # flax's eval() cannot set a read-only property: all or nothing
        with pytest.raises(UsageError, match=r"^model.eval\(\) raised RuntimeError: getter broke; nothing changed$"):
            ip.run_line_magic("nnx_mode", "m eval")
        assert_unchanged(model, before)
    else:
        ip.run_line_magic("nnx_mode", "m eval")
        assert model.layers[1].deterministic is True
    ip.user_ns.pop("m")


@needs_view
def test_nnx_view_names_the_real_cause_not_a_missing_only(ip, monkeypatch):
    import nnx_lab.widgets.views as views

    def broken(*args, **kwargs):
        raise RuntimeError("panel broke\nsecond line")

    monkeypatch.setattr(views.ViewPanel, "__init__", broken)
    ip.user_ns["m"] = nnx.Sequential(nnx.Dropout(0.1))
    with pytest.raises(UsageError, match=re.escape("m: RuntimeError: panel broke")) as e:
        ip.run_line_magic("nnx_view", "m")
    assert "--only" not in str(e.value)
    ip.user_ns.pop("m")


class PrintLayer(nnx.Module):
    """flax's view guide: set_view annotates msg as bool, the guide passes a string."""

    def __init__(self, msg=None):
        self.msg = msg

    def set_view(self, msg: bool | None = None):
        """Example.

        Args:
          msg: bool indicating if a message should be printed.
        """
        if msg is not None:
            self.msg = msg


@needs_view
def test_create_view_passes_a_python_value_on_as_nnx_view_does():
    model = PrintLayer()
    namespace = {"model": model}
    panel = nnx_lab.ViewPanel(model, namespace=namespace)
    with pytest.warns(UserWarning, match="msg takes True/False/None by its annotation; passing str 'Hello, World!'"):
        view = panel.create_view("model_print", msg="Hello, World!")
    assert view.msg == "Hello, World!" and model.msg is None and namespace["model_print"] is view
    acks = []
    panel.send = lambda content, buffers=None: acks.append(content)
    panel._on_message(panel, {"type": "view", "id": 1, "only": None, "values": {"msg": "'x'"}, "name": "v2"}, [])
    assert acks[-1]["state"] == "error"  # the browser's tri-state never sends text: refused there


class NoisyLinear(nnx.Module):
    """flax's view guide: no set_view, a `training` attribute switched by nnx.with_attributes."""

    def __init__(self, din, dout, *, training=None, rngs):
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.training = training


def test_training_attributes_are_modes(ip, capsys):
    if not hasattr(nnx, "with_attributes"):
        pytest.skip(f"nnx.with_attributes is newer than flax {compat.FLAX_VERSION}")
    rngs = nnx.Rngs(0)
    model = nnx.Sequential(NoisyLinear(4, 8, rngs=rngs), NoisyLinear(8, 2, rngs=rngs))
    assert nnx_lab.view_report(model).mode == "unset"
    train_model = nnx.with_attributes(model, training=True)
    assert nnx_lab.view_report(train_model).mode == "train"
    assert nnx_lab.view_report(nnx.with_attributes(model, training=False)).mode == "eval"
    train_model.layers[1].training = False
    report = nnx_lab.view_report(train_model)
    assert report.mode == "mixed" and report.disagreeing == ("layers[0]",) or report.disagreeing == ("layers[1]",)
    ip.user_ns["tm"] = train_model
    ip.run_line_magic("nnx_mode", "tm eval")
    assert [layer.training for layer in train_model.layers] == [False, False]
    assert "Sequential: eval" in capsys.readouterr().out
    ip.user_ns.pop("tm")


@needs_view
def test_the_mode_switch_line_names_the_training_attribute():
    rngs = nnx.Rngs(0)
    model = nnx.Sequential(NoisyLinear(4, 8, rngs=rngs), nnx.Dropout(0.1))
    toggle = nnx_lab.mode_toggle(model, target="model", display=False)
    acks = []
    toggle.send = lambda content, buffers=None: acks.append(content)
    toggle._on_message(toggle, {"type": "mode", "id": 1, "mode": "eval"}, [])
    assert acks[-1]["code"] == "model.eval(training=False)" and acks[-1]["state"] == "done"
    assert model.layers[0].training is False and model.layers[1].deterministic is True
    panel = nnx_lab.view_panel(model, display=False)
    assert [c["class"] for c in panel.payload["classes"]] == ["Dropout"]  # nnx.view acts through set_view


def test_a_path_contains_filter_is_spelled_for_the_installed_flax():
    """flax < 0.12 (Colab's) has no PathContains(exact=...): the report's filter text is still
    Python that builds the same filter there."""
    model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5))
    report = nnx_lab.view_report(model, only=nnx.PathContains("layers"))
    assert [m.class_name for m in report.modules] == ["Dropout"]
    code = report.only
    rebuilt = eval(code, {"nnx": nnx})
    assert isinstance(rebuilt, nnx.PathContains) and rebuilt.key == "layers"
    nothing = nnx_lab.view_report(model, only=nnx.PathContains("nothing"))
    assert nothing.to_text() == f"Sequential: only={nothing.only} matched no module with set_view"
