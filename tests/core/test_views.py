"""view_report: set_view options per instance, current values, and the train/eval/mixed summary."""

import re

import pytest
from flax import nnx
from IPython.core.error import UsageError

import nnx_lab
from nnx_lab.core import compat

if compat.missing("nnx.view"):  # below, module-level code uses that flax's API
    pytest.skip(compat.missing("nnx.view"), allow_module_level=True)


class Documented(nnx.Module):
    def __init__(self):
        self.temperature = 1.0
        self.verbose = False

    def set_view(self, temperature: float | None = None, verbose: bool = False, beams: int | None = None):
        """Class method used by ``nnx.view``.

        Args:
          temperature: softmax temperature used
            when sampling.
          verbose: print what happens.
          beams: beam width.
        """


class Undocumented(nnx.Module):
    def __init__(self):
        self.deterministic = None

    def set_view(self, deterministic: bool | None = None):
        pass


class Net(nnx.Module):
    def __init__(self, rngs):
        self.attn = nnx.MultiHeadAttention(2, 4, decode=False, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.doc = Documented()
        self.plain = Undocumented()
        self.linear = nnx.Linear(4, 4, rngs=rngs)  # no set_view: not listed


@pytest.fixture
def net():
    return Net(nnx.Rngs(0))


def test_instances_args_annotations_defaults_docs_and_current_values(net):
    report = nnx_lab.view_report(net)
    by_path = {m.path_text: m for m in report.modules}
    assert list(by_path) == ["attn", "bn", "doc", "drop", "plain"]  # flax iter_modules order
    attn = {a.name: a for a in by_path["attn"].args}
    assert list(attn) == ["deterministic", "decode", "batch_size", "max_length"]
    assert (attn["decode"].current, attn["batch_size"].has_current) == (False, False)
    assert attn["batch_size"].annotation == "int | Shape | None" and attn["batch_size"].kind == "literal"
    assert attn["max_length"].kind == "int" and attn["deterministic"].kind == "tri_bool"
    assert attn["deterministic"].doc == "if True, the module is set to deterministic mode."
    doc = {a.name: a for a in by_path["doc"].args}
    assert doc["temperature"].doc == "softmax temperature used when sampling."
    assert (doc["temperature"].current, doc["verbose"].kind, doc["verbose"].default) == (1.0, "bool", False)
    plain = by_path["plain"]
    assert plain.args[0].doc == "" and plain.signature == "set_view(self, deterministic: bool | None = None)"


def test_train_eval_mixed_and_unset(net):
    net.train()
    assert nnx_lab.view_report(net).mode == "train"
    net.eval()
    assert nnx_lab.view_report(net).mode == "eval"
    net.drop.deterministic = False
    report = nnx_lab.view_report(net)
    assert report.mode == "mixed" and report.disagreeing == ("drop",)
    assert report.summary().endswith("not like the rest: drop")
    fresh = Net(nnx.Rngs(0))  # MultiHeadAttention's deterministic starts as None: decided at call time
    assert nnx_lab.view_report(fresh, only=nnx.MultiHeadAttention).mode == "unset"


def test_only_filters_by_class_or_path(net):
    assert [m.path_text for m in nnx_lab.view_report(net, only=nnx.BatchNorm).modules] == ["bn"]
    assert [m.path_text for m in nnx_lab.view_report(net, only=nnx.PathContains("doc")).modules] == ["doc"]


def test_model_without_set_view_says_so():
    report = nnx_lab.view_report(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
    assert report.modules == () and report.mode == "none"
    assert report.summary() == "Linear: no submodule has set_view, so there is no mode to show"


def test_not_a_module():
    with pytest.raises(TypeError, match="expected an nnx.Module, got dict"):
        nnx_lab.view_report({})


def test_nnx_mode_magic_summarises_and_switches(ip, net, capsys):
    ip.user_ns["net"] = net
    ip.run_line_magic("nnx_mode", "net eval")
    assert net.drop.deterministic is True and net.bn.use_running_average is True
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Net: eval (4 of 5 modules with set_view are set to train or eval)"
    assert "    temperature: float | None = None   now 1.0" in out
    ip.run_line_magic("nnx_mode", "net train")
    assert net.drop.deterministic is False
    ip.run_line_magic("nnx_mode", "net")
    assert (
        capsys.readouterr().out.splitlines()[0] == "Net: train (4 of 5 modules with set_view are set to train or eval)"
    )


@pytest.mark.parametrize(
    "line, message",
    [
        ("missing", "name 'missing' is not defined"),
        ("net sideways", "mode 'sideways' is not one of train, eval"),
        ("{} eval", "TARGET '{}' is a dict, not an nnx.Module"),
    ],
)
def test_nnx_mode_bad_input_changes_nothing(ip, net, line, message):
    ip.user_ns["net"] = net
    net.train()
    with pytest.raises(UsageError, match=re.escape(message)):
        ip.run_line_magic("nnx_mode", line)
    assert nnx_lab.view_report(net).mode == "train"


# -- acting: nnx.view models, set_attributes in place, train/eval --------------------------------

from nnx_lab.core import views as core  # noqa: E402


class Picky(nnx.Module):
    """A set_view that refuses some values (and half-applies them before raising)."""

    def __init__(self):
        self.deterministic = False
        self.width = 2

    def set_view(self, deterministic: bool | None = None, width: int | None = None):
        if deterministic is not None:
            self.deterministic = deterministic
        if width is not None:
            self.width = width
            if width > 8:
                raise ValueError("width must be at most 8")


def modes_of(model):
    return {
        m.path_text: {a.name: a.current for a in m.args if a.has_current} for m in nnx_lab.view_report(model).modules
    }


def test_a_fresh_multi_head_attention_does_not_make_a_model_mixed(net):
    net.drop.deterministic = False  # train, and attn left at None (decided at call time)
    report = nnx_lab.view_report(net)
    assert report.mode == "train" and report.disagreeing == () and report.unset == ("attn", "plain")
    assert report.summary().endswith("decided at call time: attn, plain")


def test_make_view_shares_arrays_and_leaves_the_model_alone(net):
    net.train()
    report = nnx_lab.view_report(net)
    scope = core.scope_for(report, {"class": "Dropout"})
    view = core.make_view(net, scope, core.coerce_values(net, report, scope, {"deterministic": True}))
    assert view.drop.deterministic is True and net.drop.deterministic is False
    assert view.bn.use_running_average is False  # not in scope
    assert view.attn.query.kernel is net.attn.query.kernel


def test_a_set_view_that_raises_is_one_line_and_changes_nothing():
    class Holder(nnx.Module):
        def __init__(self):
            self.p = Picky()

    model = Holder()
    before = modes_of(model)
    report = nnx_lab.view_report(model)
    scope = core.scope_for(report, None)
    with pytest.raises(core.ViewError, match=r"^nnx.view raised ValueError: width must be at most 8$"):
        core.make_view(model, scope, {"width": 9, "deterministic": True})
    with pytest.raises(core.ViewError, match="width must be at most 8"):
        core.apply_in_place(model, scope, {"width": 9, "deterministic": True})
    assert modes_of(model) == before


def test_apply_in_place_is_all_or_nothing(net, monkeypatch):
    net.train()
    before = modes_of(net)
    report = nnx_lab.view_report(net)
    scope = core.scope_for(report, None)
    calls = []
    real = nnx.Module.__setattr__
    originals = {id(m) for _, m in nnx.iter_modules(net)}  # not the copies nnx.view validates on

    def flaky(self, name, value):  # the second module set fails halfway through set_attributes
        if name == "deterministic" and id(self) in originals:
            calls.append(name)
            if len(calls) == 2:
                raise RuntimeError("device lost")
        real(self, name, value)

    monkeypatch.setattr(nnx.Module, "__setattr__", flaky)
    with pytest.raises(core.ViewError, match="set_attributes raised RuntimeError: device lost; nothing changed"):
        core.apply_in_place(net, scope, {"deterministic": True})
    monkeypatch.undo()
    assert modes_of(net) == before


def test_apply_in_place_by_path_and_the_line_that_does_it(net):
    net.train()
    report = nnx_lab.view_report(net)
    scope = core.scope_for(report, {"path": ["bn"]})
    core.apply_in_place(net, scope, {"use_running_average": True})
    assert net.bn.use_running_average is True and net.drop.deterministic is False
    assert (
        core.apply_code("net", scope, {"use_running_average": True})
        == "net.set_attributes(lambda path, node: path == ('bn',), use_running_average=True)"
    )
    # the line shown is the line that ran: it does the same thing when the user runs it
    fresh = Net(nnx.Rngs(0))
    fresh.train()
    eval(core.apply_code("fresh", scope, {"use_running_average": True}), {"fresh": fresh, "nnx": nnx})
    assert modes_of(fresh) == modes_of(net)


def test_view_code_names_classes_so_the_line_runs(net):
    report = nnx_lab.view_report(net)
    ns = {"Documented": Documented}
    assert core.scope_for(report, {"class": "Dropout"}).code == "nnx.Dropout"
    assert core.scope_for(report, {"class": "Documented"}, ns).code == "Documented"
    holder = nnx.Sequential(Picky(), nnx.Dropout(0.5))  # Picky is not in the user's namespace
    unbound = core.scope_for(nnx_lab.view_report(holder), {"class": "Picky"}, ns)
    assert unbound.code == "lambda path, node: type(node).__name__ == 'Picky'"
    line = core.view_code("holder", "v", unbound, {"deterministic": True})
    assert line == "v = nnx.view(holder, only=lambda path, node: type(node).__name__ == 'Picky', deterministic=True)"
    scope = {"holder": holder, "nnx": nnx}
    exec(line, scope)
    assert scope["v"].layers[0].deterministic is True and scope["v"].layers[1].deterministic is not True
    assert core.make_view(holder, unbound, {"deterministic": True}).layers[0].deterministic is True


@pytest.mark.parametrize(
    "values, message",
    [
        ({}, "choose at least one value to set"),
        (
            {"nonsense": True},
            "no module in all modules takes 'nonsense' in set_view (they take: batch_size, beams, decode, "
            "deterministic, max_length, temperature, use_running_average, verbose)",
        ),
        ({"deterministic": "yes"}, "deterministic takes True/False/None, not str 'yes'"),
        ({"verbose": None}, "verbose takes True/False, not NoneType None"),
        ({"max_length": True}, "max_length takes an int or None, not bool True"),
        ({"max_length": "12a"}, "max_length takes an int or None, not '12a'"),
        (
            {"batch_size": "__import__('os').system('x')"},
            "batch_size: \"__import__('os').system('x')\" is not a Python literal",
        ),
    ],
)
def test_browser_values_are_checked_and_never_evaluated(net, values, message):
    report = nnx_lab.view_report(net)
    with pytest.raises(core.ViewError, match=re.escape(message)):
        core.coerce_values(net, report, core.scope_for(report, None), values, from_text=True)


def test_browser_text_becomes_literals_and_ints(net):
    report = nnx_lab.view_report(net)
    got = core.coerce_values(
        net,
        report,
        core.scope_for(report, None),
        {"batch_size": " (2, 3) ", "max_length": "16", "decode": True},
        from_text=True,
    )
    assert got == {"batch_size": (2, 3), "max_length": 16, "decode": True}


def test_keys_outside_the_scope_are_refused(net):
    report = nnx_lab.view_report(net)
    with pytest.raises(core.ViewError, match=r"no module in class Dropout takes 'use_running_average'"):
        core.coerce_values(net, report, core.scope_for(report, {"class": "Dropout"}), {"use_running_average": True})
    for spec, message in [
        ({"class": "Linear"}, "no single class named 'Linear'"),
        ({"path": ["nowhere"]}, "no module with set_view at path ['nowhere']"),
        ("drop", "a scope is None"),
    ]:
        with pytest.raises(core.ViewError, match=re.escape(message)):
            core.scope_for(report, spec)


def test_set_mode_all_or_nothing(net):
    core.set_mode(net, "eval")
    assert nnx_lab.view_report(net).mode == "eval"
    with pytest.raises(core.ViewError, match="mode is 'train' or 'eval', not 'sideways'"):
        core.set_mode(net, "sideways")
    assert nnx_lab.view_report(net).mode == "eval"


# -- audit fixes: filters as Python, module paths, annotations, value types, wording ---------------

import typing  # noqa: E402
from typing import Optional, Union  # noqa: E402

from unchanged import assert_unchanged, frozen  # noqa: E402


class EncDec(nnx.Module):
    def __init__(self):
        self.enc = nnx.Sequential(nnx.Dropout(0.5), Picky())
        self.dec = nnx.Sequential(nnx.Dropout(0.5))


def test_a_class_scope_stays_inside_the_base_filter():
    model = EncDec()
    model.train()
    base = core.base_scope(model, nnx.PathContains("enc"))
    scope = core.scope_for(nnx_lab.view_report(model, only=base.only), {"class": "Dropout"}, base=base)
    assert scope.code == "nnx.All(nnx.PathContains('enc', exact=True), nnx.Dropout)"
    core.apply_in_place(model, scope, {"deterministic": True})
    assert model.enc.layers[0].deterministic is True and model.dec.layers[0].deterministic is False
    assert core.make_view(model, scope, {"deterministic": True}).dec.layers[0].deterministic is False
    fresh = EncDec()
    fresh.train()
    exec(core.apply_code("fresh", scope, {"deterministic": True}), {"fresh": fresh, "nnx": nnx})
    assert modes_of(fresh) == modes_of(model)  # the line shown does what ran


def filter_a(path, node):
    return True


@pytest.mark.parametrize(
    "only, code",
    [
        (nnx.Dropout, "nnx.Dropout"),
        ((nnx.Dropout, nnx.BatchNorm), "(nnx.Dropout, nnx.BatchNorm)"),
        ([nnx.Dropout], "(nnx.Dropout,)"),
        (nnx.PathContains("mha", exact=False), "nnx.PathContains('mha', exact=False)"),
        (
            nnx.All(nnx.Dropout, nnx.Not(nnx.PathContains(0))),
            "nnx.All(nnx.Dropout, nnx.Not(nnx.PathContains(0, exact=True)))",
        ),
        (nnx.Any(nnx.OfType(nnx.BatchNorm), nnx.WithTag("x")), "nnx.Any(nnx.BatchNorm, nnx.WithTag('x'))"),
        (nnx.Everything(), "nnx.Everything()"),
        (filter_a, "filter_a"),  # a function bound to a name: that name
        (lambda path, node: True, None),  # no Python text reaches it
        (nnx.All(nnx.Dropout, lambda path, node: True), None),
    ],
)
def test_filter_code_spells_filters_as_python(only, code):
    assert core.filter_code(only, {"filter_a": filter_a}) == code
    if code is not None:
        assert eval(code, {"nnx": nnx, "filter_a": filter_a}) is not None  # runnable text


@pytest.mark.parametrize("only", ["layers[1]", "layers/1", " layers.1 ", ("layers", 1)])
def test_only_a_module_path_is_that_module_and_below(only):
    model = nnx.Sequential(nnx.Dropout(0.5), nnx.Sequential(nnx.Dropout(0.5), EncDec()))
    report = nnx_lab.view_report(model, only=only)
    assert [m.path_text for m in report.modules] == [
        "layers[1].layers[0]",
        "layers[1].layers[1].dec.layers[0]",
        "layers[1].layers[1].enc.layers[0]",
        "layers[1].layers[1].enc.layers[1]",
    ]
    base = core.base_scope(model, only)
    assert base.code == "lambda path, node: path[:2] == ('layers', 1)"
    model.train()
    core.apply_in_place(model, base, {"deterministic": True})
    assert model.layers[0].deterministic is False and model.layers[1].layers[0].deterministic is True


def test_a_filter_matching_nothing_says_so():
    model = EncDec()
    assert (
        nnx_lab.view_report(model, only="enc/nowhere").summary()
        == "EncDec: only='enc/nowhere' matched no module with set_view"
    )
    assert (
        nnx_lab.view_report(model, only=nnx.BatchNorm).summary()
        == "EncDec: only=nnx.BatchNorm matched no module with set_view"
    )


class Annotated(nnx.Module):
    def __init__(self):
        self.a = self.b = self.c = self.d = self.t = self.s = None

    def set_view(
        self,
        a: Optional[bool] = None,
        b: typing.Optional[int] = None,
        c: Union[bool, None] = None,
        d: Union[int, str, None] = None,
        t: float | None = None,
        s: "typing.Union[str, tuple[int, int]]" = "x",
    ):
        pass


class AnnotatedText(nnx.Module):
    def set_view(
        self,
        a: "Optional[bool]" = None,
        b: "typing.Optional[int]" = None,
        c: "Union[bool, None]" = None,
        d: "t.Union[int, str, None]" = None,
    ):
        pass


@pytest.mark.parametrize("cls", [Annotated, AnnotatedText])
def test_optional_and_union_annotations_are_normalised(cls):
    args = {a.name: a for a in nnx_lab.view_report(nnx.Sequential(cls())).modules[0].args}
    assert [(a.annotation, a.kind) for a in list(args.values())[:4]] == [
        ("bool | None", "tri_bool"),
        ("int | None", "int"),
        ("bool | None", "tri_bool"),
        ("int | str | None", "literal"),
    ]
    if cls is Annotated:
        assert (args["t"].annotation, args["s"].annotation) == ("float | None", "str | tuple[int, int]")


@pytest.mark.parametrize(
    "values, message",
    [
        ({"t": "'hot'"}, "t takes a float or None, not str 'hot'"),
        ({"t": "True"}, "t takes a float or None, not bool True"),
        ({"s": "3"}, "s takes a str or a tuple, not int 3"),
        ({"d": "2.5"}, "d takes an int or a str or None, not float 2.5"),
        ({"b": "'3'"}, "b takes an int or None, not str '3'"),
        ({"b": "1.5"}, "b takes an int or None, not float 1.5"),
    ],
)
def test_literal_values_must_match_simple_annotations(values, message):
    model = nnx.Sequential(Annotated())
    before = frozen(model)
    report = nnx_lab.view_report(model)
    with pytest.raises(core.ViewError, match="^" + re.escape(message) + "$"):
        core.coerce_values(model, report, core.scope_for(report, None), values, from_text=True)
    assert_unchanged(model, before)


def test_values_that_match_are_kept_and_complex_annotations_stay_permissive(net):
    model = nnx.Sequential(Annotated())
    report = nnx_lab.view_report(model)
    scope = core.scope_for(report, None)
    got = core.coerce_values(
        model, report, scope, {"t": "3", "s": "(1, 2)", "d": "'x'", "b": "None", "a": None}, from_text=True
    )
    assert got == {"t": 3, "s": (1, 2), "d": "x", "b": None, "a": None}  # an int is a float here
    report = nnx_lab.view_report(net)
    # int | Shape | None: Shape is not checked, so set_view decides
    assert core.coerce_values(net, report, core.scope_for(report, None), {"batch_size": "'any'"}, from_text=True) == {
        "batch_size": "any"
    }


def test_an_int_or_none_argument_takes_none_from_the_browser(net):
    report = nnx_lab.view_report(net)
    scope = core.scope_for(report, None)
    assert core.coerce_values(net, report, scope, {"max_length": None}, from_text=True) == {"max_length": None}
    assert core.coerce_values(net, report, scope, {"max_length": " None "}, from_text=True) == {"max_length": None}

    class IntOnly(nnx.Module):
        def set_view(self, width: int = 2):
            pass

    model = nnx.Sequential(IntOnly())
    report = nnx_lab.view_report(model)
    with pytest.raises(core.ViewError, match=r"^width takes an int, not NoneType None$"):
        core.coerce_values(model, report, core.scope_for(report, None), {"width": None}, from_text=True)


def test_the_summary_counts_only_modules_set_to_train_or_eval(net):
    net.drop.deterministic = False  # attn and plain stay None: decided at call time
    assert nnx_lab.view_report(net).summary() == (
        "Net: train (2 of 5 modules with set_view are set to train or eval); decided at call time: attn, plain"
    )


def test_the_panel_header_counts_the_modules_decided_at_call_time(net):
    net.drop.deterministic = False  # "train", though attn and plain are decided at call time
    report = nnx_lab.view_report(net)
    assert (report.mode, report.count_text()) == ("train", "5 modules with set_view, 2 decided at call time")
    panel = nnx_lab.view_panel(net, display=False)
    assert panel.payload["count_text"] == "5 modules with set_view, 2 decided at call time"
    net.eval()
    assert nnx_lab.view_report(net).count_text() == "5 modules with set_view"


def test_a_mode_switch_on_a_model_without_a_mode_is_an_error(ip):
    model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), Documented())
    before = frozen(model)
    with pytest.raises(
        core.ViewError,
        match=r"^Sequential: no submodule has a train/eval argument "
        r"\(deterministic, use_running_average, training\), so model.eval\(\) would change nothing$",
    ):
        core.set_mode(model, "eval")
    ip.user_ns["lin"] = model
    with pytest.raises(UsageError, match="no submodule has a train/eval argument"):
        ip.run_line_magic("nnx_mode", "lin eval")
    assert_unchanged(model, before)
