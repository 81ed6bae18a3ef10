"""The view panel and mode toggle without a browser: requests as the browser sends them, acks, bad input."""

import gc

import pytest
from flax import nnx
from view_models import make, modes

import nnx_lab

pytestmark = pytest.mark.needs_flax("nnx.view")

EVIL = "<img src=x onerror=alert(1)>"


class Panel:
    """A panel driven the way the browser drives it: custom messages in, acks out."""

    def __init__(self, model, ns=None, **kwargs):
        self.ns = {"model": model} if ns is None else ns
        self.widget = nnx_lab.ViewPanel(model, namespace=self.ns, **kwargs)
        self.acks = []
        self.widget.send = self.acks.append
        self.next_id = 0

    def click(self, **content):
        self.next_id += 1
        self.widget._on_message(self.widget, {"id": self.next_id, **content}, [])
        ack = self.acks[-1]
        assert ack["id"] == self.next_id
        return ack


def test_payload_groups_instances_by_class_with_current_values():
    model = make()
    payload = Panel(model).widget.payload
    assert (payload["variant"], payload["root"], payload["target"], payload["default_name"]) == (
        "views",
        "Sequential",
        "model",
        "model_view",
    )
    assert [c["class"] for c in payload["classes"]] == ["BatchNorm", "Dropout"]
    dropout = payload["classes"][1]
    assert dropout["only"] == "nnx.Dropout"
    assert (
        dropout["args"]
        == [
            {
                "name": "deterministic",
                "annotation": "bool | None",
                "default": "None",
                "doc": "if True, disables dropout masking.",
                "kind": "tri_bool",
            }
        ]
        or dropout["args"][0]["name"] == "deterministic"
    )
    assert [(i["path"], i["key"], i["mode"], i["values"]) for i in dropout["instances"]] == [
        ("layers[0].drop", ["layers", 0, "drop"], "train", {"deterministic": "False"}),
        ("layers[1].drop", ["layers", 1, "drop"], "train", {"deterministic": "False"}),
    ]


def test_create_view_binds_a_view_sharing_arrays_and_shows_the_line():
    model = make()
    panel = Panel(model)
    ack = panel.click(type="view", name="eval_model", only={"class": "Dropout"}, values={"deterministic": True})
    assert (
        ack["state"] == "done" and ack["code"] == "eval_model = nnx.view(model, only=nnx.Dropout, deterministic=True)"
    )
    view = panel.ns["eval_model"]
    assert view.layers[0].drop.deterministic is True and model.layers[0].drop.deterministic is False
    assert view.layers[1].linear.kernel is model.layers[1].linear.kernel  # the same arrays
    assert view.layers[0].bn.use_running_average is False


def test_apply_in_place_for_one_instance_then_mixed_mode_is_reported():
    model = make()
    panel = Panel(model)
    ack = panel.click(type="apply", only={"path": ["layers", 1, "bn"]}, values={"use_running_average": True})
    assert ack == {
        "type": "ack",
        "id": 1,
        "state": "done",
        "text": "set in place on layers[1].bn",
        "code": "model.set_attributes(lambda path, node: path == ('layers', 1, 'bn'), use_running_average=True)",
    }
    assert model.layers[1].bn.use_running_average is True and model.layers[0].bn.use_running_average is False
    payload = panel.widget.payload
    assert payload["mode"] == "mixed" and payload["disagreeing"] == ["layers[1].bn"]


def test_train_eval_switch_in_place():
    model = make()
    panel = Panel(model, variant="modes")
    assert panel.click(type="mode", mode="eval")["code"] == "model.eval()"
    assert panel.widget.payload["mode"] == "eval" and model.layers[0].drop.deterministic is True
    assert panel.click(type="mode", mode="train")["text"] == "model is now train"
    assert nnx_lab.view_report(model).mode == "train"


@pytest.mark.parametrize(
    "content, message",
    [
        (dict(type="apply", only=None, values={"nonsense": True}), "no module in all modules takes 'nonsense'"),
        (
            dict(type="apply", only=None, values={"deterministic": "True"}),
            "deterministic takes True/False/None, not str",
        ),
        (
            dict(type="apply", only={"class": "Linear"}, values={"deterministic": True}),
            "no single class named 'Linear'",
        ),
        (dict(type="apply", only=None, values="deterministic"), "values must be a mapping"),
        (dict(type="view", name="class", only=None, values={"deterministic": True}), "'class' is a Python keyword"),
        (dict(type="view", name="x y", only=None, values={"deterministic": True}), "'x y' is not a valid Python name"),
        (dict(type="mode", mode="<script>"), "mode is 'train' or 'eval', not '<script>'"),
    ],
)
def test_bad_requests_are_one_line_errors_and_change_nothing(content, message):
    model = make()
    panel = Panel(model)
    before, names = modes(model), set(panel.ns)
    ack = panel.click(**content)
    assert ack["state"] == "error" and message in ack["text"] and "\n" not in ack["text"]
    assert modes(model) == before and set(panel.ns) == names


def test_an_unexpected_failure_is_an_error_ack_and_logged(monkeypatch, caplog):
    model = make()
    panel = Panel(model)
    before = modes(model)

    def broken(*args, **kwargs):
        raise RuntimeError("device lost\nsecond line")

    monkeypatch.setattr(panel.widget, "_run", broken)
    with caplog.at_level("WARNING", logger="nnx_lab"):
        ack = panel.click(type="mode", mode="eval")
    assert ack["state"] == "error" and "device lost" in ack["text"] and "\n" not in ack["text"]
    assert any("request failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert modes(model) == before


def test_model_without_set_view_says_so():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    panel = Panel(model)
    assert panel.widget.payload["message"] == "Linear: no submodule has set_view, so there is no mode to show"
    ack = panel.click(type="apply", only=None, values={"deterministic": True})
    assert ack["state"] == "error" and "no submodule has set_view" in ack["text"]


def test_only_limits_the_panel_and_scopes_all_requests():
    model = make()
    panel = Panel(model, only=nnx.Dropout, only_code="nnx.Dropout")
    assert [c["class"] for c in panel.widget.payload["classes"]] == ["Dropout"]
    ack = panel.click(type="apply", only=None, values={"deterministic": True})
    assert ack["code"] == "model.set_attributes(nnx.Dropout, deterministic=True)"
    assert model.layers[0].drop.deterministic is True and model.layers[0].bn.use_running_average is False


def test_not_a_module_and_a_filter_that_raises():
    with pytest.raises(TypeError, match="expected an nnx.Module, got dict"):
        nnx_lab.view_panel({})

    def broken(path, node):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        nnx_lab.view_panel(make(), only=broken)


def test_user_strings_are_text_in_the_static_fallback():
    evil = type(
        EVIL,
        (nnx.Module,),
        {"set_view": lambda self, deterministic: None, "__init__": lambda self: setattr(self, "deterministic", False)},
    )
    model = nnx.Dict({EVIL: evil()})
    panel = nnx_lab.ViewPanel(model, namespace={})
    bundle = panel._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert EVIL not in data["text/html"] and "&lt;img src=x onerror=alert(1)&gt;" in data["text/html"]
    assert panel.payload["classes"][0]["class"] == EVIL  # JSON data; the browser puts it in as text


def test_the_panel_does_not_keep_the_model_alive():
    model = make()
    panel = Panel(model, ns={})
    del model
    gc.collect()
    panel.widget._after_cell()  # the cell that deleted it ends: the panel says so before any click
    assert panel.widget.payload["gone"] is True and panel.widget.payload["mode"] == "none"
    assert panel.widget.payload["message"] == "the model is gone (deleted or garbage-collected)"
    ack = panel.click(type="mode", mode="eval")
    assert ack["state"] == "error" and ack["text"] == "the model is gone (deleted or garbage-collected)"


def test_a_report_read_before_the_model_went_shows_the_panel_gone():
    model = make()
    panel = Panel(model, ns={})
    report = panel.widget.report()  # read while the model lives
    del model
    gc.collect()
    panel.widget.refresh(report)  # shown after it went: the panel says so (it showed the old report as live)
    assert panel.widget.payload["gone"] is True and panel.widget.payload["mode"] == "none"
    assert panel.widget.payload["message"] == "the model is gone (deleted or garbage-collected)"


def test_requests_from_another_thread_are_queued_until_a_step():
    """What a subshell thread does while a cell runs: queue, ack 'queued', apply on the main thread."""
    import threading

    model = make()
    panel = Panel(model)
    thread = threading.Thread(
        target=panel.widget._on_message, args=(panel.widget, {"type": "mode", "id": 7, "mode": "eval"}, [])
    )
    thread.start()
    thread.join()
    assert panel.acks[-1]["state"] == "queued"
    assert model.layers[0].drop.deterministic is False  # nothing touched off the main thread
    steps = list(panel.widget.track(range(3)))
    assert steps == [0, 1, 2]
    assert panel.acks[-1] == {
        "type": "ack",
        "id": 7,
        "state": "done",
        "text": "model is now eval",
        "code": "model.eval()",
    }
    assert model.layers[0].drop.deterministic is True


def test_a_viewers_tick_applies_queued_clicks_too():
    import threading

    model = make()
    panel = Panel(model)
    viewer = nnx_lab.watch(model, display=False)
    click = {"type": "mode", "id": 1, "mode": "eval"}  # sent while a cell runs: from another thread
    thread = threading.Thread(target=panel.widget._on_message, args=(panel.widget, click, []))
    thread.start()
    thread.join()
    assert panel.acks[-1]["state"] == "queued" and model.layers[0].drop.deterministic is False
    viewer.tick()
    assert model.layers[0].drop.deterministic is True and panel.acks[-1]["state"] == "done"
    viewer.close()


def test_every_panel_on_the_model_shows_a_change_made_in_one():
    model = make()
    toggle = Panel(model, variant="modes")
    views = Panel(model)
    assert views.widget.payload["mode"] == "train"
    toggle.click(type="mode", mode="eval")
    assert views.widget.payload["mode"] == "eval"


def test_panels_follow_cells_without_load_ext():
    """`import nnx_lab` and a panel, no `%load_ext`: the first panel registers the after-cell hook."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()

    def unregister_nnx_labs_hooks():  # a kernel where nnx_lab was only imported: none of its cell hooks
        for event, callbacks in shell.events.callbacks.items():
            for fn in [fn for fn in callbacks if getattr(fn, "__module__", "").startswith("nnx_lab.")]:
                shell.events.unregister(event, fn)

    unregister_nnx_labs_hooks()
    try:
        shell.user_ns["model"] = make()
        shell.run_cell(
            "import nnx_lab\ntoggle = nnx_lab.mode_toggle(model, display=False)\n"
            "panel = nnx_lab.capture_panel(model, display=False)"
        )
        toggle, panel = shell.user_ns["toggle"], shell.user_ns["panel"]
        assert toggle.payload["mode"] == "train"
        shell.run_cell("model.eval()")
        assert toggle.payload["mode"] == "eval"  # the cell's change shows without a click
        shell.run_cell("del model\nimport gc\ngc.collect();")
        assert toggle.payload["gone"] is True and panel.status["message"].startswith("the model is gone")
    finally:
        unregister_nnx_labs_hooks()
        for name in ("model", "toggle", "panel"):
            shell.user_ns.pop(name, None)


# -- audit fixes ------------------------------------------------------------------------------

from unchanged import assert_unchanged, frozen  # noqa: E402


class EncDec(nnx.Module):
    def __init__(self):
        self.enc = nnx.Sequential(nnx.Dropout(0.5), nnx.BatchNorm(2, rngs=nnx.Rngs(0)))
        self.dec = nnx.Sequential(nnx.Dropout(0.5))


def test_a_class_click_stays_inside_the_panels_only():
    model = EncDec()
    model.train()
    panel = Panel(model, only=nnx.PathContains("enc"))
    dropout = next(c for c in panel.widget.payload["classes"] if c["class"] == "Dropout")
    assert dropout["only"] == "nnx.All(nnx.PathContains('enc', exact=True), nnx.Dropout)"  # the browser's line too
    ack = panel.click(type="apply", only={"class": "Dropout"}, values={"deterministic": True})
    assert (
        ack["code"]
        == "model.set_attributes(nnx.All(nnx.PathContains('enc', exact=True), nnx.Dropout), deterministic=True)"
    )
    assert model.enc.layers[0].deterministic is True and model.dec.layers[0].deterministic is False
    ack = panel.click(type="view", name="v", only={"class": "Dropout"}, values={"deterministic": False})
    assert (
        ack["code"]
        == "v = nnx.view(model, only=nnx.All(nnx.PathContains('enc', exact=True), nnx.Dropout), deterministic=False)"
    )


def test_the_panels_only_is_shown_as_python_or_honestly_as_unnamed():
    model = EncDec()
    assert Panel(model, only=(nnx.Dropout, nnx.BatchNorm)).widget.payload["base_only"] == "(nnx.Dropout, nnx.BatchNorm)"
    assert (
        Panel(model, only=nnx.PathContains("enc")).widget.payload["base_only"] == "nnx.PathContains('enc', exact=True)"
    )
    unnamed = Panel(model, only=lambda path, node: "enc" in path)
    assert unnamed.widget.payload["base_only"] == "<your filter>"
    ack = unnamed.click(type="apply", only=None, values={"deterministic": True})
    assert ack["state"] == "done" and ack["code"] == "model.set_attributes(<your filter>, deterministic=True)"
    assert (
        "<your filter> is the only= filter given to the panel, which has no Python text: pass only_code=" in ack["text"]
    )
    named = nnx_lab.view_panel(model, only=lambda path, node: "enc" in path, only_code="enc_only", display=False)
    assert named.payload["base_only"] == "enc_only"


def test_a_module_path_as_only():
    model = make()
    for only in ("layers[1]", "layers/1", ("layers", 1)):
        panel = Panel(model, only=only)
        assert [i["path"] for c in panel.widget.payload["classes"] for i in c["instances"]] == [
            "layers[1].bn",
            "layers[1].drop",
        ]
        assert panel.widget.payload["base_only"] == "lambda path, node: path[:2] == ('layers', 1)"
    ack = panel.click(type="apply", only={"class": "Dropout"}, values={"deterministic": True})
    assert model.layers[1].drop.deterministic is True and model.layers[0].drop.deterministic is False
    assert ack["code"] == (
        "model.set_attributes(nnx.All(lambda path, node: path[:2] == ('layers', 1), nnx.Dropout), deterministic=True)"
    )
    nowhere = Panel(model, only="layers[5]")
    assert nowhere.widget.payload["message"] == "Sequential: only='layers[5]' matched no module with set_view"


def test_create_view_refuses_the_name_of_the_panels_model():
    model = make()
    panel = Panel(model)
    before = frozen(model)
    ack = panel.click(type="view", name="model", only=None, values={"deterministic": True})
    assert ack == {
        "type": "ack",
        "id": 1,
        "state": "error",
        "code": "",
        "text": "view name 'model' holds the model itself; choose another name",
    }
    assert panel.ns["model"] is model and panel.widget.payload.get("gone") is not True
    assert_unchanged(model, before)


def test_a_mode_click_on_a_model_without_a_mode_is_an_error():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    panel = Panel(model, variant="modes")
    before = frozen(model)
    ack = panel.click(type="mode", mode="eval")
    assert ack["state"] == "error" and ack["text"].startswith("Linear: no submodule has a train/eval argument")
    assert_unchanged(model, before)


def test_an_int_or_none_option_set_to_none_from_the_browser():
    model = nnx.Sequential(nnx.MultiHeadAttention(2, 4, decode=False, rngs=nnx.Rngs(0)))
    panel = Panel(model)
    args = {a["name"]: a for a in panel.widget.payload["classes"][0]["args"]}
    assert (args["max_length"]["kind"], args["max_length"]["nullable"]) == ("int", True)
    view = panel.click(type="view", name="v", only=None, values={"max_length": None, "decode": False})
    assert view["state"] == "done" and view["code"] == "v = nnx.view(model, max_length=None, decode=False)"
    bad = panel.click(type="view", name="w", only=None, values={"max_length": "'long'"})
    assert bad["state"] == "error" and bad["text"] == "max_length takes an int or None, not str 'long'"
