"""view_report: set_view options per instance, current values, and the train/eval/mixed summary."""

import re

import pytest
from flax import nnx
from IPython.core.error import UsageError

import nnx_lab


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
    assert out.splitlines()[0] == "Net: eval (4 of 5 modules with set_view have a mode)"
    assert "    temperature: float | None = None   now 1.0" in out
    ip.run_line_magic("nnx_mode", "net train")
    assert net.drop.deterministic is False
    ip.run_line_magic("nnx_mode", "net")
    assert capsys.readouterr().out.splitlines()[0] == "Net: train (4 of 5 modules with set_view have a mode)"


@pytest.mark.parametrize("line, message", [
    ("missing", "name 'missing' is not defined"),
    ("net sideways", "argument mode: invalid choice: 'sideways'"),
    ("{} eval", "TARGET '{}' is a dict, not an nnx.Module"),
])
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
    return {m.path_text: {a.name: a.current for a in m.args if a.has_current}
            for m in nnx_lab.view_report(model).modules}


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
    assert core.apply_code("net", scope, {"use_running_average": True}) == \
        "net.set_attributes(lambda path, node: path == ('bn',), use_running_average=True)"
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


@pytest.mark.parametrize("values, message", [
    ({}, "choose at least one value to set"),
    ({"nonsense": True}, "no module in all modules takes 'nonsense' in set_view (they take: batch_size, beams, decode, "
                         "deterministic, max_length, temperature, use_running_average, verbose)"),
    ({"deterministic": "yes"}, "deterministic takes True/False/None, not str 'yes'"),
    ({"verbose": None}, "verbose takes True/False, not NoneType None"),
    ({"max_length": True}, "max_length takes an int, not bool True"),
    ({"max_length": "12a"}, "max_length takes an int, not '12a'"),
    ({"batch_size": "__import__('os').system('x')"}, "batch_size: \"__import__('os').system('x')\" is not a "
                                                    "Python literal"),
])
def test_browser_values_are_checked_and_never_evaluated(net, values, message):
    report = nnx_lab.view_report(net)
    with pytest.raises(core.ViewError, match=re.escape(message)):
        core.coerce_values(net, report, core.scope_for(report, None), values, from_text=True)


def test_browser_text_becomes_literals_and_ints(net):
    report = nnx_lab.view_report(net)
    got = core.coerce_values(net, report, core.scope_for(report, None),
                             {"batch_size": " (2, 3) ", "max_length": "16", "decode": True}, from_text=True)
    assert got == {"batch_size": (2, 3), "max_length": 16, "decode": True}


def test_keys_outside_the_scope_are_refused(net):
    report = nnx_lab.view_report(net)
    with pytest.raises(core.ViewError, match=r"no module in class Dropout takes 'use_running_average'"):
        core.coerce_values(net, report, core.scope_for(report, {"class": "Dropout"}), {"use_running_average": True})
    for spec, message in [({"class": "Linear"}, "no single class named 'Linear'"),
                          ({"path": ["nowhere"]}, "no module with set_view at path ['nowhere']"),
                          ("drop", "a scope is None")]:
        with pytest.raises(core.ViewError, match=re.escape(message)):
            core.scope_for(report, spec)


def test_set_mode_all_or_nothing(net):
    core.set_mode(net, "eval")
    assert nnx_lab.view_report(net).mode == "eval"
    with pytest.raises(core.ViewError, match="mode is 'train' or 'eval', not 'sideways'"):
        core.set_mode(net, "sideways")
    assert nnx_lab.view_report(net).mode == "eval"
