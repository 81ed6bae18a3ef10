"""%nnx_snapshot and %nnx_watch: what they display and bind, TARGET expressions, bad input."""

import pytest
from flax import nnx
from IPython.core.error import UsageError


def test_snapshot_magic_displays_and_binds(ip, capsys):
    ip.user_ns["model"] = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    ip.run_line_magic("nnx_snapshot", "model --as snap")
    snap = ip.user_ns["snap"]
    assert [r.path for r in snap.rows] == [("bias",), ("kernel",)]
    assert "Linear: 2 variables" in capsys.readouterr().out


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "the following arguments are required: target"),
        ("missing_model", "TARGET 'missing_model': name 'missing_model' is not defined"),
        ("1/0", "TARGET '1/0' raised ZeroDivisionError"),
        ("42", "expected an nnx.Module"),
        ("model --as class", "--as 'class' is a Python keyword"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(ip, line, message):
    ip.user_ns["model"] = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    before = nnx.state(ip.user_ns["model"])
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        ip.run_line_magic("nnx_snapshot", line)
    after = nnx.state(ip.user_ns["model"])
    assert jax_equal(before, after)


def jax_equal(a, b):
    import jax
    import numpy as np

    return jax.tree.structure(a) == jax.tree.structure(b) and all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
    )


def test_target_expressions_keep_their_quotes_and_spaces(ip):
    ip.user_ns["heads"] = {"my head": nnx.Linear(2, 3, rngs=nnx.Rngs(0))}
    ip.run_line_magic("nnx_snapshot", "heads['my head'] --as snap")
    assert [r.path for r in ip.user_ns["snap"].rows] == [("bias",), ("kernel",)]
    ip.run_line_magic("nnx_watch", "heads[ 'my head' ] --as viewer")
    assert ip.user_ns["viewer"].snapshot["root_type"] == "Linear"


def _stack():
    import jax

    class Stacked(nnx.Module):
        def __init__(self):
            make = nnx.vmap(lambda key: nnx.Linear(2, 2, rngs=nnx.Rngs(key)), in_axes=0, out_axes=0)
            self.blocks = make(jax.random.split(jax.random.key(0), 3))

    return Stacked()


def test_layers_option_gives_one_row_per_layer(ip):
    ip.user_ns["model"] = _stack()
    ip.run_line_magic("nnx_snapshot", "model --layers blocks=0 --as snap")
    paths = [r.path_text for r in ip.user_ns["snap"].rows]
    assert paths[:4] == ["blocks.bias", "blocks.bias[layer 0]", "blocks.bias[layer 1]", "blocks.bias[layer 2]"]
    ip.run_line_magic("nnx_watch", "model --layers blocks=0 --as viewer")
    assert ip.user_ns["viewer"].snapshot["rows"]["layer"][1:4] == [0, 1, 2]


@pytest.mark.parametrize("magic", ["nnx_snapshot", "nnx_watch"])
@pytest.mark.parametrize(
    "option, message",
    [
        ("--layers blocks", "'blocks' is not PREFIX=AXIS"),
        ("--layers blockz=0", "no Variable under 'blockz'"),
        ("--layers blocks=4", r"blocks.bias has shape \(3, 2\), no axis 4"),
    ],
)
def test_a_bad_layers_option_is_a_one_line_usage_error(ip, magic, option, message):
    ip.user_ns["model"] = _stack()
    before = nnx.state(ip.user_ns["model"])
    with pytest.raises(UsageError, match=message):
        ip.run_line_magic(magic, f"model {option} --as out")
    assert "out" not in ip.user_ns
    assert jax_equal(before, nnx.state(ip.user_ns["model"]))
