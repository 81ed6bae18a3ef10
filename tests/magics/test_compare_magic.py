"""%nnx_compare: what it displays and binds, checkpoint paths as string literals, bad input."""

import pytest
from flax import nnx
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen


def test_compare_magic_displays_and_binds(ip, capsys):
    ip.user_ns["a"] = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    ip.user_ns.update(b=nnx.Linear(2, 3, rngs=nnx.Rngs(1)), nnx=nnx)
    ip.run_line_magic("nnx_compare", "a nnx.state(b) --tol 1e-9 --as cmp")
    cmp = ip.user_ns["cmp"]
    assert cmp.tol == 1e-9 and [r.status for r in cmp.rows] == ["changed", "identical"]
    out = capsys.readouterr().out
    assert "Linear vs State: b loads into a: 0 missing, 0 unexpected, 0 shape mismatches" in out
    assert "kernel" in out


def test_compare_magic_reads_a_checkpoint_path(ip, tmp_path):
    ocp = pytest.importorskip("orbax.checkpoint")
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(tmp_path / "ckpt", nnx.state(model))
    checkpointer.wait_until_finished()
    ip.user_ns.update(model=model, where=str(tmp_path / "ckpt"))
    ip.run_line_magic("nnx_compare", "model where --as cmp")
    assert ip.user_ns["cmp"].identical


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "the following arguments are required: a, b"),
        ("a", "the following arguments are required: b"),
        ("a missing", "B 'missing': name 'missing' is not defined"),
        ("a 42", "compare: b is int, not an nnx.Module"),
        ("a a --tol -1", "--tol must be a number in"),
        ("a a --as class", "--as 'class' is a Python keyword"),
        ("a a --layers nothing=0", "no Variable under 'nothing'"),
        ("a '/no/such/dir'", "got the path '/no/such/dir', which is not a directory"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(ip, line, message):
    ip.user_ns["a"] = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    before = frozen(ip.user_ns["a"])
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        ip.run_line_magic("nnx_compare", line)
    assert "\n" not in str(info.value)
    assert_unchanged(ip.user_ns["a"], before)
