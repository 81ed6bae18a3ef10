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
