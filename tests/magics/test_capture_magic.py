"""%%nnx_capture: what it binds and shows, --grads, and every bad input leaving the model (and namespace) as it was."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from IPython.core.error import UsageError
from scan_models import Scanned
from unchanged import assert_unchanged as _assert_unchanged
from unchanged import frozen

import nnx_lab.widgets.capture_report as capture_report  # the panel %%nnx_capture draws its report in
from nnx_lab.core.capture import CaptureReport, patched_classes

pytestmark = pytest.mark.needs_flax("nnx.capture")


class MyInterm(nnx.Intermediate):
    pass


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)

    def __call__(self, x):
        h = self.perturb("h", self.linear(x))
        self.sow(nnx.Intermediate, "h", h)
        self.sow(MyInterm, "mine", -h)
        return h**2


class Model(nnx.Module):
    def __init__(self, rngs):
        self.blocks = nnx.List([Block(rngs), Block(rngs)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


NAMES = ("captured", "captured_grads", "acts", "ran", "y", "loss", "forward", "not_a_model", "loss_fn", "n")


@pytest.fixture
def ip(ip):
    ip.user_ns.update(nnx=nnx, jax=jax, jnp=jnp, MyInterm=MyInterm, x=jnp.linspace(-1, 1, 6).reshape(2, 3))
    ip.user_ns["model"] = Model(nnx.Rngs(0))
    ip.user_ns["forward"] = nnx.jit(lambda model, x: model(x))
    yield ip
    for name in NAMES:
        ip.user_ns.pop(name, None)


@pytest.fixture
def shown(monkeypatch):
    reports = []
    monkeypatch.setattr(capture_report, "CaptureReportView", lambda report, **view: reports.append(report) or report)
    return reports


def assert_unchanged(model, before):
    _assert_unchanged(model, before)
    assert not any("__captures__" in vars(m) for _, m in nnx.iter_modules(model))
    assert patched_classes() == {}


def paths(state):
    from nnx_lab.core.graph import path_text

    return sorted(path_text(p) for p, _ in nnx.to_flat_state(state))


def cell(ip, line, body="y = model(x)"):
    ip.run_cell_magic("nnx_capture", line, body)


def test_binds_captured_and_shows_the_report(ip, capsys):
    model = ip.user_ns["model"]
    before = frozen(model)
    cell(ip, "model", "y = model(x)\ny = model(x)")
    captured = ip.user_ns["captured"]
    assert isinstance(captured, nnx.State)
    assert paths(captured) == ["blocks[0].h", "blocks[1].h"]
    assert len(captured["blocks"][0]["h"].get_value()) == 2
    out = capsys.readouterr().out
    assert "captured 4 arrays (Intermediate)" in out and "blocks[0].h[1]" in out
    assert "also sown but not chosen: Perturbation, MyInterm" in out
    assert_unchanged(model, before)


def test_methods_only_as_and_types_from_the_namespace(ip, shown):
    cell(ip, "model --methods --only blocks[1] --as acts --types Intermediate,MyInterm")
    assert paths(ip.user_ns["acts"]) == [
        "blocks[1].__call__",
        "blocks[1].h",
        "blocks[1].linear.__call__",
        "blocks[1].mine",
    ]
    assert "captured" not in ip.user_ns
    [report] = shown
    assert isinstance(report, CaptureReport) and report.matched == (("blocks", 1, "linear"), ("blocks", 1))
    cell(ip, "model --only blocks/0/linear --methods")
    assert paths(ip.user_ns["captured"]) == ["blocks[0].linear.__call__"]
    cell(ip, "model --only nnx.PathContains('linear') --methods")
    assert paths(ip.user_ns["captured"]) == ["blocks[0].linear.__call__", "blocks[1].linear.__call__"]
    cell(ip, "model --only 'blocks[0]'")  # a quoted path is a path too
    assert paths(ip.user_ns["captured"]) == ["blocks[0].h"]


def test_jitted_function_and_submodule_calls_are_captured(ip, shown):
    cell(ip, "model", "y = forward(model, x)\nz = model.blocks[1](x)")
    assert len(ip.user_ns["captured"]["blocks"][1]["h"].get_value()) == 2
    assert np.allclose(
        ip.user_ns["captured"]["blocks"][0]["h"].get_value()[0], ip.user_ns["model"].blocks[0].linear(ip.user_ns["x"])
    )
    ip.user_ns.pop("z")


def test_grads_flag(ip, shown):
    model = ip.user_ns["model"]
    before = frozen(model)
    ip.run_cell("def loss_fn(model, x):\n    return model(x).sum()")
    original = ip.user_ns["loss_fn"]
    cell(ip, "model --grads loss_fn", "loss = loss_fn(model, x)\nn = loss_fn(nnx.Linear(3, 1, rngs=nnx.Rngs(0)), x)")
    assert ip.user_ns["loss_fn"] is original  # the stand-in is gone
    assert isinstance(ip.user_ns["loss"], jax.Array) and ip.user_ns["loss"].shape == ()
    grads = ip.user_ns["captured_grads"]
    assert paths(grads) == ["blocks[0].h", "blocks[1].h"]
    h1 = model.blocks[1].linear(model.blocks[0].linear(ip.user_ns["x"]) ** 2)  # no uncaptured sow calls
    assert np.allclose(grads["blocks"][1]["h"].get_value(), 2 * h1)  # d/dh sum(h ** 2)
    assert paths(ip.user_ns["captured"]) == ["blocks[0].h", "blocks[1].h"]  # the loss call's forward values
    [report] = shown
    assert len(report.grads_snapshot.rows) == 2
    assert report.messages == ("also sown but not chosen: MyInterm",)  # the perturbations are the gradients
    assert "gradients at 2 perturbations" in report.to_text()
    assert_unchanged(model, before)


def test_the_report_is_shown_as_the_capture_table_widget_holding_no_arrays(ip, monkeypatch):
    """%%nnx_capture shows the capture panel's table (modules as a tree, gradients beside their
    values) without toggles; the widget keeps JSON and text, never the captured arrays."""
    import IPython.display

    from nnx_lab.widgets.capture_report import CaptureReportView

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    ip.run_cell("def loss_fn(model, x):\n    return model(x).sum()")
    cell(ip, "model --grads loss_fn", "loss = loss_fn(model, x)")
    [view] = shown
    assert isinstance(view, CaptureReportView) and view.variant == "report"
    assert view.status["target"] == "model" and view.status["elapsed_ms"] > 0
    nodes = view.report["snapshot"]["nodes"]
    assert nodes["key"][:2] == ["blocks", 0] and nodes["type"][1] == "Block"  # module rows, labelled by class
    assert view.report["grads"]["snapshot"]["rows"]["key"] == ["h", "h"]
    bundle = view._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("captured 2 arrays (Intermediate)")
    assert "&lt;" not in data["text/plain"] and data["text/html"].startswith('<div class="nnx-lab-capture">')
    assert not [v for v in vars(view).values() if isinstance(v, (jax.Array, nnx.State))]
    view.close()


def test_grads_flag_explains_missing_gradients(ip, shown):
    ip.run_cell("def loss_fn(model, x):\n    return model(x).sum()")
    cell(ip, "model --grads loss_fn", "y = model(x)")
    assert ip.user_ns["captured_grads"] is None
    assert shown[-1].messages[-1] == (
        "--grads loss_fn: the body never called loss_fn(model, ...), so there are no gradients"
    )
    ip.user_ns["plain"] = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
    cell(ip, "plain --grads loss_fn", "loss = loss_fn(plain, x)")
    assert ip.user_ns["captured_grads"] is None and ip.user_ns["loss"].shape == ()
    assert shown[-1].messages[-1].startswith("--grads loss_fn: no module called perturb() under Perturbation")
    ip.user_ns.pop("plain")


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "the following arguments are required: target"),
        ("missing_model", "TARGET 'missing_model': name 'missing_model' is not defined"),
        ("x", "TARGET 'x' is an ArrayImpl, not an nnx.Module"),
        ("nnx.state(model)", "TARGET 'nnx.state(model)' is a State, not an nnx.Module"),
        ("model --types Linear", "--types: 'Linear' is a type, not an nnx.Variable type"),
        ("model --types nnx.Linear", "--types: 'nnx.Linear' is a type, not an nnx.Variable type"),
        ("model --types Nope", "--types: unknown Variable type 'Nope'"),
        ("model --types x", "--types: 'x' is an ArrayImpl, not an nnx.Variable type"),
        (
            "model --only 1/0",
            "--only '1/0' is not a module path of TARGET, and as an expression it raised ZeroDivisionError",
        ),
        ("model --only 42", "only=42 is not an NNX filter or a module path"),
        (
            "model --only (lambda p, m: 1 / 0)",
            "--only (lambda p, m: 1 / 0) raised ZeroDivisionError: division by zero on the module at ",
        ),
        (
            "model --only (lambda p, m: jnp.ones(3))",
            "--only (lambda p, m: jnp.ones(3)) returned an ArrayImpl for the module at ",
        ),
        ("model --only (lambda p, m: None)", "not True or False; nothing was armed"),
        ("model --only jnp.ones(3)", "is not an NNX filter or a module path"),
        ("model --as class", "--as 'class' is a Python keyword"),
        ("model --as model", "--as 'model' would replace TARGET itself"),
        ("model --grads nowhere", "--grads nowhere: no such name in the namespace"),
        ("model --grads x", "--grads x is an ArrayImpl, not a function"),
        ("model --grads 'f(x)'", "--grads takes the name of a loss function"),
        ("model --bins 0", "--bins must be an integer in [1, 1024]"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(ip, line, message):
    model = ip.user_ns["model"]
    before = frozen(model)
    with pytest.raises(UsageError) as info:
        cell(ip, line, "ran = True\ny = model(x)")
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert "ran" not in ip.user_ns and "captured" not in ip.user_ns  # the body never ran, nothing bound
    assert_unchanged(model, before)


def test_only_matching_nothing_warns_and_still_runs(ip, shown):
    cell(ip, "model --only blocks[7]", "ran = True\ny = model(x)")
    assert ip.user_ns["ran"] is True
    assert paths(ip.user_ns["captured"]) == []
    assert shown[-1].messages == ("--only blocks[7] matched no module, so nothing was captured",)
    cell(ip, "model --only nnx.Conv", "y = model(x)")
    assert shown[-1].messages == ("--only nnx.Conv matched no module, so nothing was captured",)


def test_nothing_sown_under_the_chosen_types_names_what_was(ip, capsys):
    cell(ip, "model --types BatchStat")
    out = capsys.readouterr().out
    assert (
        "nothing was sown under BatchStat; sown instead: Perturbation, Intermediate, MyInterm "
        "(choose those types to capture them)"
    ) in out
    assert paths(ip.user_ns["captured"]) == []


@pytest.mark.parametrize("error", ["raise ValueError('boom')", "raise KeyboardInterrupt"])
def test_body_that_raises_leaves_everything_as_before(ip, error):
    model = ip.user_ns["model"]
    before = frozen(model)
    classes = {cls: dict(vars(cls)) for cls in (Model, Block, nnx.Linear, nnx.List)}
    ip.run_cell("def loss_fn(model, x):\n    return model(x).sum()")
    original = ip.user_ns["loss_fn"]
    with pytest.raises((ValueError, KeyboardInterrupt)) as info:
        cell(ip, "model --methods --grads loss_fn", f"y = model(x)\nloss = loss_fn(model, x)\n{error}")
    assert any("nothing was bound" in note for note in getattr(info.value, "__notes__", []))
    assert "captured" not in ip.user_ns
    assert ip.user_ns["loss_fn"] is original
    assert {cls: dict(vars(cls)) for cls in classes} == classes
    assert_unchanged(model, before)


def test_xss_sow_names_are_escaped(ip, shown):
    ip.run_cell(
        "class Evil(nnx.Module):\n"
        "    def __call__(self, x):\n"
        "        self.sow(nnx.Intermediate, '<img src=x onerror=alert(1)>', x)\n"
        "        return x\n"
        "evil = Evil()"
    )
    cell(ip, "evil", "y = evil(x)")
    html = shown[-1].to_html()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    ip.user_ns.pop("evil")
    ip.user_ns.pop("Evil")


def test_help_names_every_option(ip):
    doc = ip.magics_manager.magics["cell"]["nnx_capture"].__doc__
    for option in ("--types", "--methods", "--only", "--as", "--grads", "--bins", "NAME_grads"):
        assert option in doc


def test_methods_on_an_rnn_is_a_one_line_upstream_limit(ip):
    ip.user_ns["rnn"] = nnx.RNN(nnx.SimpleCell(2, 3, rngs=nnx.Rngs(0)))
    ip.user_ns["xs"] = jnp.ones((1, 4, 2))
    try:
        with pytest.raises(UsageError) as info:
            cell(ip, "rnn --methods", "y = rnn(xs)")
        message = str(info.value)
        assert "\n" not in message and "inside a jax scan" in message and "an upstream limit" in message
        assert "captured" not in ip.user_ns
        assert not any("__captures__" in vars(m) for _, m in nnx.iter_modules(ip.user_ns["rnn"]))
        assert patched_classes() == {}
    finally:
        ip.user_ns.pop("rnn")
        ip.user_ns.pop("xs")


def test_flaxs_own_capture_in_the_body_takes_over_and_the_report_says_so(ip, shown):
    """flax's extracting_intermediates guide inside %%nnx_capture: as an inner nnx.capture does in flax,
    the guide's own capture gets exactly what it gets alone, ours keeps nothing of that call, and the
    report says where the values went (instead of "no module called sow()")."""
    model = ip.user_ns["model"]
    before = frozen(model)
    _, alone = nnx.capture(model, nnx.Intermediate)(ip.user_ns["x"])
    cell(ip, "model", "y, intms = nnx.capture(model, nnx.Intermediate)(x)")
    assert paths(ip.user_ns["intms"]) == paths(alone) == ["blocks[0].h", "blocks[1].h"]
    assert np.allclose(ip.user_ns["intms"]["blocks"][1]["h"].get_value()[0], alone["blocks"][1]["h"].get_value()[0])
    assert paths(ip.user_ns["captured"]) == []
    text = shown[-1].to_text()
    assert text.startswith(
        "captured 0 arrays (Intermediate)\n!! 1 call ran inside your own nnx.capture: "
        "what it sowed went to that capture's result, not here"
    )
    assert "no module called" not in text
    assert_unchanged(model, before)
    ip.user_ns.pop("intms")


def test_flaxs_guide_vmap_over_a_broadcast_model_with_its_own_capture_inside(ip, shown):
    """flax's guide, "NNX transforms and capturing": nnx.vmap(in_axes=(None, ...)) over the model and the
    user's own nnx.capture inside, under %%nnx_capture (failed with "at vmap out_axes ... got axis spec
    None but output was batched")."""
    ip.run_cell(
        "class Foo(nnx.Module):\n"
        "    def __init__(self, dim):\n"
        "        self.w = nnx.Param(jax.random.normal(jax.random.key(0), dim))\n"
        "    def __call__(self, x):\n"
        "        x = self.perturb('grad_of_x', x)\n"
        "        y = jnp.dot(x, self.w)\n"
        "        self.sow(nnx.Intermediate, 'y', y)\n"
        "        return y\n"
        "class Host(nnx.Module):\n"
        "    def __init__(self):\n"
        "        self.foo = Foo(4)\n"
        "    def __call__(self, x):\n"
        "        inner = lambda m, x: nnx.capture(m, nnx.Intermediate)(x)\n"
        "        return nnx.vmap(inner, in_axes=(None, 0))(self.foo, x)\n"
        "host, xs = Host(), jnp.ones((3, 4))\n"
        "expected_y, expected = host(xs)\n"
    ).raise_error()
    try:
        cell(ip, "host", "y, intms = host(xs)")
        assert np.allclose(ip.user_ns["y"], ip.user_ns["expected_y"])
        assert paths(ip.user_ns["intms"]) == paths(ip.user_ns["expected"]) == ["y"]
        assert paths(ip.user_ns["captured"]) == []
        assert shown[-1].messages[0].startswith("1 call ran inside your own nnx.capture")
    finally:
        for name in ("Foo", "Host", "host", "xs", "expected_y", "expected", "intms"):
            ip.user_ns.pop(name, None)


def test_grads_messages_agree_with_what_was_found(ip, shown):
    ip.run_cell(
        "class OnlyPerturbs(nnx.Module):\n"
        "    def __call__(self, x):\n"
        "        return self.perturb('x', x) ** 2\n"
        "perturbs = OnlyPerturbs()\n"
        "def loss_fn(model, x):\n"
        "    return model(x).sum()"
    )
    try:
        cell(ip, "perturbs --grads loss_fn", "loss = loss_fn(perturbs, x)")
        report = shown[-1]
        assert len(report.grads_snapshot.rows) == 1 and "gradients at 1 perturbation" in report.to_text()
        assert not any(
            "perturb()" in m and "no module called" in m and "sow() or perturb()" in m for m in report.messages
        )
        assert report.messages[0] == (
            "nothing was sown under Intermediate: no module called sow() during the "
            "capture; the perturb() points are the gradients"
        )
    finally:
        for name in ("OnlyPerturbs", "perturbs"):
            ip.user_ns.pop(name, None)


def _layer_rows(report):
    return [(r.path_text, r.layer) for r in report.snapshot.rows if r.layer_of is not None]


@pytest.mark.parametrize("how", ["declared", "metadata"])
def test_values_sown_inside_nnx_scan_get_one_row_per_layer(ip, monkeypatch, how):
    shown = []
    monkeypatch.setattr(capture_report, "CaptureReportView", lambda report, **kw: shown.append(report) or report)
    model = Scanned(metadata=how == "metadata")
    ip.user_ns.update(model=model, x=jnp.ones((2, 3)))
    ip.run_cell_magic("nnx_capture", "model" + (" --layers blocks=0" if how == "declared" else ""), "y = model(x)")
    report = shown[-1]
    assert _layer_rows(report) == [(f"blocks.y[0][layer {i}]", i) for i in range(4)]
    stacked = np.asarray(ip.user_ns["captured"]["blocks"]["y"].get_value()[0])
    assert stacked.shape == (4, 2, 3)
    for i in range(4):
        row = report.snapshot[f"blocks.y[0][layer {i}]"]
        assert row.stats["mean"] == pytest.approx(stacked[i].mean(), rel=1e-5, abs=1e-6)
        assert row.stats["max"] == pytest.approx(stacked[i].max())
    assert report.to_text().startswith("captured 1 array ")
    payload = report.to_dict()["snapshot"]["rows"]
    assert payload["layer"][1:5] == [0, 1, 2, 3]


def test_a_layers_option_that_fits_no_captured_value_is_a_message(ip, monkeypatch):
    shown = []
    monkeypatch.setattr(capture_report, "CaptureReportView", lambda report, **kw: shown.append(report) or report)
    ip.user_ns.update(model=Scanned(), x=jnp.ones((2, 3)))
    ip.run_cell_magic("nnx_capture", "model --layers nothing=0", "y = model(x)")
    assert "--layers: layers={'nothing': 0}: no Variable under 'nothing'" in shown[-1].messages
    assert _layer_rows(shown[-1]) == []
    with pytest.raises(UsageError, match="'blocks' is not PREFIX=AXIS"):
        ip.run_cell_magic("nnx_capture", "model --layers blocks --as other", "y = model(x)")
    assert "other" not in ip.user_ns
