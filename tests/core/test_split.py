"""split_report: what each filter takes, in order, for every kind of NNX filter."""

import jax.numpy as jnp
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.split import SplitError


class Lora(nnx.Param):
    pass


class Net(nnx.Module):
    def __init__(self, rngs):
        self.dense = nnx.Linear(2, 3, rngs=rngs)
        self.bn = nnx.BatchNorm(3, rngs=rngs)
        self.lora = Lora(jnp.zeros((3, 1)))
        self.tied = self.dense.kernel
        self.drop = nnx.Dropout(0.5, rngs=rngs)


@pytest.fixture
def model():
    return Net(nnx.Rngs(0))


def test_first_matching_filter_takes_and_later_matches_are_shadowed(model):
    report = nnx_lab.split_report(model, nnx.Param, nnx.Variable)
    param, variable = report.filters
    assert param.count == 5 and set(param.types) == {"Param", "Lora"}
    assert variable.count == 4 and set(variable.types) == {"BatchStat", "RngKey", "RngCount"}
    assert {r.row.path for r in report.shadowed} == set(param.paths)  # every Param is also a Variable
    assert param.shadowing == 5 and report.exhaustive and not report.unused


def test_filter_that_takes_nothing_and_remainder_with_fix(model):
    report = nnx_lab.split_report(model, nnx.Param, nnx.PathContains("nothing_here"))
    assert [f.name for f in report.unused] == ["nothing_here"]
    assert not report.exhaustive
    assert {r.row.type for r in report.remainder} == {"BatchStat", "RngKey", "RngCount"}
    problems = report.problems()
    assert problems[0] == f"filter 2 (nnx.{nnx.PathContains('nothing_here')!r}) took nothing"  # flax's own repr
    assert problems[-1].startswith("not exhaustive: 4 Variables matched no filter (")
    assert problems[-1].endswith("add `...` as the last filter to collect them")


@pytest.mark.parametrize(
    "filters, counts",
    [
        ((Lora, ...), [1, 8]),  # a user Variable subclass
        (("params", ...), [0, 9]),  # a tag string (WithTag): nothing here is tagged
        (((nnx.BatchStat, Lora), ...), [3, 6]),  # a tuple is Any
        ((nnx.All(nnx.Param, nnx.PathContains("dense")), ...), [2, 7]),
        ((nnx.Any(nnx.PathContains("bn"), nnx.OfType(Lora)), ...), [5, 4]),
        ((nnx.Not(nnx.Param), ...), [4, 5]),
        ((lambda path, value: path[-1] == "kernel", True), [1, 8]),
        ((None, ...), [0, 9]),
        ((False, ...), [0, 9]),
    ],
)
def test_every_filter_kind(model, filters, counts):
    report = nnx_lab.split_report(model, *filters)
    assert [f.count for f in report.filters] == counts
    graphdef, *states = nnx.split(model, *filters)
    assert [len(list(nnx.to_flat_state(s))) for s in states] == counts  # agrees with flax


def test_labels_read_as_the_python_that_builds_each_filter(model):
    """A composite filter's label is its Python text (views' filter_code), not flax's repr of the
    classes inside it (``nnx.All(OfType(<class 'flax.nnx.variablelib.Param'>), ...)``)."""
    report = nnx_lab.split_report(
        model, nnx.All(nnx.Param, nnx.Not(nnx.OfType(Lora))), [nnx.BatchStat, "tag"], Lora, _never, ...
    )
    labels = [line.split(" -> ")[0] for line in report.to_text().splitlines()[1:6]]
    assert labels[:3] == [
        "  [1] nnx.All(nnx.Param, nnx.Not(Lora))",
        "  [2] (nnx.BatchStat, 'tag')",
        "  [3] Lora",  # a user class: its name
    ]
    assert labels[3].startswith("  [4] <function _never at ")  # no Python text: its repr
    assert labels[4] == "  [5] ..."


def _never(path, value):
    return False


def test_shared_variable_counted_once_with_aliases(model):
    report = nnx_lab.split_report(model, ...)
    [shared] = report.shared
    assert shared.row.path_text == "dense.kernel" and [p for p in shared.row.aliases] == [("tied",)]
    assert report.filters[0].count == 9


def test_bad_filters_are_clear_errors(model):
    with pytest.raises(SplitError, match=r"can only be the last filter \(it is filter 1 of 2\)"):
        nnx_lab.split_report(model, ..., nnx.Param)
    with pytest.raises(SplitError, match=r"filter 1 \(3\) is not an NNX filter"):
        nnx_lab.split_report(model, 3)

    def boom(path, value):
        raise KeyError("boom")

    with pytest.raises(SplitError, match=r"filter 2 \(boom_filter\) raised KeyError on bn.bias"):
        nnx_lab.split_report(model, nnx.BatchStat, boom, labels=["nnx.BatchStat", "boom_filter"])


def test_names_code_text_and_html(model):
    report = nnx_lab.split_report(model, nnx.Param, nnx.BatchStat, ...)
    assert [f.name for f in report.filters] == ["param", "batch_stat", "rest"]
    assert report.code("net") == "graphdef, param, batch_stat, rest = nnx.split(net, nnx.Param, nnx.BatchStat, ...)"
    text = report.to_text()
    assert text.splitlines()[0] == "split of Net: 9 Variables into 3 filters"
    assert "[1] nnx.Param -> param: 5 Variables" in text
    page = report._repr_html_()
    assert page.count("●") == 9 and "nnx.split(model" in page
    data = report.to_dict()
    assert data["rows"]["taken_by"].count(0) == 5 and data["filters"][2]["name"] == "rest"


@pytest.mark.needs_flax("nnx.List")
def test_user_strings_are_escaped_in_html():
    model = nnx.Dict({"<script>alert(1)</script>": nnx.Param(jnp.ones(2))})
    page = nnx_lab.split_report(model, nnx.PathContains("<b>x</b>"), ...)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>x" not in page
