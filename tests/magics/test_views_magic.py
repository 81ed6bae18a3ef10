"""%nnx_view: the panel it displays, --as, --only (a module path or a filter), --modes, bad input."""

import re

import pytest
from flax import nnx
from IPython.core.error import UsageError
from view_models import make, modes

pytestmark = pytest.mark.needs_flax("nnx.view")


def shown_by_nnx_view(ip, monkeypatch, model, *lines):
    """The panels `%nnx_view LINE` displays, for each line, with `net` bound to ``model``."""
    import nnx_lab.widgets.views as views_widgets  # the panels %nnx_view displays

    ip.user_ns.update(net=model, nnx=nnx)
    shown = []

    class Shown(views_widgets.ViewPanel):  # each panel the magic makes, recorded as it is made (then displayed)
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            shown.append(self)

    monkeypatch.setattr(views_widgets, "ViewPanel", Shown)
    for line in lines:
        ip.run_line_magic("nnx_view", line)
    return shown


def test_nnx_view_magic(ip, monkeypatch):
    model = make()
    views, toggle = shown_by_nnx_view(ip, monkeypatch, model, "net --as ev --only nnx.Dropout", "net --modes")
    assert views.payload["default_name"] == "ev" and [c["class"] for c in views.payload["classes"]] == ["Dropout"]
    assert views.payload["base_only"] == "nnx.Dropout" and toggle.payload["variant"] == "modes"
    views.send = lambda m: None
    views._on_message(views, {"type": "view", "id": 1, "only": None, "values": {"deterministic": True}, "name": ""}, [])
    assert ip.user_ns["ev"].layers[0].drop.deterministic is True


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "the following arguments are required: target"),
        ("missing", "name 'missing' is not defined"),
        ("{}", "TARGET '{}' is a dict, not an nnx.Module"),
        ("net --as 2x", "--as '2x' is not a valid Python name"),
        (
            "net --only nnx.Nope",
            "--only 'nnx.Nope' is not a module path of TARGET, and as an expression it raised "
            "AttributeError: Module flax.nnx has no attribute 'Nope'",
        ),
        ("net --only (lambda p, n: 1/0)", "--only '(lambda p, n: 1/0)': ZeroDivisionError: division by zero"),
        ("net --only nnx.Dropout --modes", "--modes shows them all"),
    ],
)
def test_nnx_view_bad_input(ip, line, message):
    ip.user_ns.update(net=make(), nnx=nnx)
    before = modes(ip.user_ns["net"])
    with pytest.raises(UsageError, match=re.escape(message)):
        ip.run_line_magic("nnx_view", line)
    assert modes(ip.user_ns["net"]) == before


def test_nnx_view_only_takes_a_module_path(ip, monkeypatch):
    one, drop = shown_by_nnx_view(ip, monkeypatch, make(), "net --only layers[1]", "net --only layers/0/drop")
    assert [i["path"] for c in one.payload["classes"] for i in c["instances"]] == ["layers[1].bn", "layers[1].drop"]
    assert one.payload["base_only"] == "lambda path, node: path[:2] == ('layers', 1)"
    assert [i["path"] for c in drop.payload["classes"] for i in c["instances"]] == ["layers[0].drop"]


def test_nnx_view_only_written_as_a_path_that_names_nothing_lists_no_module(ip, monkeypatch):
    # The same reading of --only as %%nnx_capture's: not a path of the model, not a name in the
    # namespace, written as a path: a path that matches nothing, and the panel says so.
    (panel,) = shown_by_nnx_view(ip, monkeypatch, make(), "net --only blocks[7]")
    assert panel.payload["message"] == "Sequential: only='blocks[7]' matched no module with set_view"
