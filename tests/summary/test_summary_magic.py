"""%nnx_summary: arguments from the namespace and shapes on the line, options, and one-line refusals."""

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from IPython.core.error import UsageError

from nnx_lab.core.summary import Summary


@pytest.fixture
def ip(ip):
    ip.user_ns.update(nnx=nnx, jax=jax, jnp=jnp)
    ip.run_cell(
        "model = nnx.Sequential(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(8, 2, rngs=nnx.Rngs(1)))\n"
        "x = jnp.ones((3, 4))"
    )
    yield ip
    for name in ("model", "x", "s", "s2"):
        ip.user_ns.pop(name, None)


def test_namespace_arg_and_shapes_agree(ip, capsys):
    ip.run_line_magic("nnx_summary", "model x --as s --no-memory")
    ip.run_line_magic("nnx_summary", "model float32[3,4] --as s2 --depth 0")
    s, s2 = ip.user_ns["s"], ip.user_ns["s2"]
    assert isinstance(s, Summary) and s.flops == s2.flops == 2 * 3 * 4 * 8 + 3 * 8 + 3 * 8 + 2 * 3 * 8 * 2 + 3 * 2
    assert [r.path for r in s.rows] == ["", "layers[0]", "layers[2]"] and len(s2.rows) == 1
    assert "layers[0]" in capsys.readouterr().out
    ip.run_line_magic("nnx_summary", "model (3, 4) --as s --grad --no-memory")
    assert ip.user_ns["s"].flops == s.flops and ip.user_ns["s"].backward_flops > 0


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "the following arguments are required: model"),
        ("nope x", "MODEL 'nope': name 'nope' is not defined"),
        ("model y", "ARG 'y': name 'y' is not defined"),
        ("model floaty[3,4]", "'floaty' is not a dtype"),
        ("model (3, -4)", "a shape's sizes are non-negative"),
        (
            "model x x",
            "layers[0] (Linear.__call__) raised",
        ),  # Sequential takes *args: the first layer says
        ("model x --method nope", "--method nope: Sequential has no such method"),
        ("model float32[3,5]", "layers[0] (Linear.__call__) raised"),
        ("model x --depth -1", "--depth must be"),
        ("model x --as for", "--as 'for'"),
    ],
)
def test_bad_lines_are_one_line(ip, line, message):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("nnx_summary", line)
    assert message in str(info.value) and "\n" not in str(info.value)
