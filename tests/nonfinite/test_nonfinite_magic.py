"""%%nnx_nonfinite MODEL: the cell's loss or forward searched as find_nonfinite does, the report shown,
the model and the namespace unchanged; bad input one line each."""

import jax.numpy as jnp
import pytest
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen

from nnx_lab.core.nonfinite import NonfiniteReport

from .models import Stack, mse


@pytest.fixture
def ns(ip):
    x = jnp.linspace(-1.0, 1.0, 32).reshape(4, 8)
    ip.user_ns.update(model=Stack(fault_at=2, fault="log"), fine=Stack(), x=x, y=jnp.zeros((4, 1)), mse=mse, jnp=jnp)
    return ip


def test_names_the_culprit_block_and_leaves_model_and_namespace_as_they_were(ns, capsys):
    model = ns.user_ns["model"]
    before = frozen(model)
    names = set(ns.user_ns)
    ns.run_cell_magic("nnx_nonfinite", "model", "pred = model(x)\nloss = jnp.mean((pred - y) ** 2)\nloss")
    out = capsys.readouterr().out
    assert "the forward pass first produced NaN/Inf in blocks.2 (Block.__call__)" in out
    assert "primitive: log" in out
    assert set(ns.user_ns) == names  # pred and loss stayed in the scratch namespace
    assert_unchanged(model, before)


def test_backward_and_as_binds_the_report(ns):
    ns.user_ns["model"] = Stack(fault_at=4, fault="sqrt")
    ns.user_ns["x"] = jnp.zeros((4, 8))
    before = frozen(ns.user_ns["model"])
    ns.run_cell_magic("nnx_nonfinite", "model --as report", "mse(model, x, y)")
    report = ns.user_ns["report"]
    assert isinstance(report, NonfiniteReport)
    assert (report.direction, report.module_path) == ("backward", "blocks.4")
    assert_unchanged(ns.user_ns["model"], before)


def test_a_nan_already_in_the_model_is_named_by_the_models_name_not_fn_args(ns, capsys):
    # the cell has no fn and no args[0]: the leaf is named as the user wrote the model
    bad = Stack()
    bad.blocks[3].linear.kernel[1, 2] = jnp.nan
    ns.user_ns["bad"] = bad
    ns.run_cell_magic("nnx_nonfinite", "bad --as report", "mse(bad, x, y)")
    out = capsys.readouterr().out
    assert "the NaN/Inf values were already in bad's Variables:\n  bad.blocks[3].linear.kernel" in out, out
    assert "args[0]" not in out and "fn's" not in out, out
    assert [row["name"] for row in ns.user_ns["report"].payload()["bad"]] == ["bad.blocks[3].linear.kernel"]


def test_finite_cell_says_so(ns, capsys):
    ns.run_cell_magic("nnx_nonfinite", "fine", "mse(fine, x, y)")
    assert "everything finite" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ("modle", "mse(model, x, y)", "MODEL 'modle': name 'modle' is not defined; did you mean model"),
        ("x", "mse(model, x, y)", "not an nnx.Module"),
        ("", "mse(model, x, y)", "required: target"),
        ("model.blocks[0]", "model(x)", "must be a name"),
        ("model", "loss = mse(model, x, y)", "last line must be an expression"),
        ("model", "model(", "does not parse"),
        ("fine", "fine(x)", "not a scalar loss"),
        ("model --ass report", "model(x)", "did you mean --as"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(ns, line, body, message):
    model = ns.user_ns["model"]
    before = frozen(model)
    names = set(ns.user_ns)
    with pytest.raises(UsageError, match=message) as info:
        ns.run_cell_magic("nnx_nonfinite", line, body)
    assert "\n" not in str(info.value)
    assert set(ns.user_ns) == names
    assert_unchanged(model, before)
