"""What every magic does with its line and body. %%nnx_capture and %%nnx_split run their body
as IPython runs a cell: the last expression is displayed and stored in Out/_ (not after a trailing
``;``), and a traceback shows the body's lines. The line is split outside brackets and strings;
``--only`` is read one way for every magic."""

import re

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from IPython.core.error import UsageError

capture_only = pytest.mark.needs_flax("nnx.capture")


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "h", h)
        return h


class Armed:
    """Renders as whether the model carried __captures__ when it was displayed."""

    def __init__(self, model):
        self.model = model

    def __repr__(self):
        return f"armed={any('__captures__' in vars(m) for _, m in nnx.iter_modules(self.model))}"


@pytest.fixture
def ip(ip):
    ip.user_ns.update(nnx=nnx, jnp=jnp, np=np, Armed=Armed, x=jnp.ones((1, 2)), model=Block(nnx.Rngs(0)))
    yield ip
    for name in ("model", "x", "Armed", "np", "y", "param", "graphdef", "rest", "captured", "z", "events", "Block"):
        ip.user_ns.pop(name, None)
    for name in ("g", "a", "b", "c", "r"):
        ip.user_ns.pop(name, None)


def run(ip, cell):
    """Run a whole cell as the notebook would, with history (so Out[n] exists)."""
    result = ip.run_cell(cell, store_history=True)
    return result, result.execution_count


@capture_only
def test_capture_body_last_expression_is_displayed_and_stored(ip, capsys):
    result, n = run(ip, "%%nnx_capture model\ny = model(x)\nfloat(y.sum()) + 1000")
    assert result.success
    expected = float(ip.user_ns["y"].sum()) + 1000
    assert result.result == expected
    assert ip.user_ns["Out"][n] == expected and ip.user_ns["_"] == expected
    assert f"Out[{n}]: {expected!r}" in capsys.readouterr().out
    assert len(ip.user_ns["captured"]["h"].get_value()) == 1  # the body still ran under the capture


@capture_only
def test_capture_body_value_is_displayed_after_the_capture_is_disarmed(ip, capsys):
    result, n = run(ip, "%%nnx_capture model\nArmed(model)")
    assert repr(result.result) == "armed=False"
    assert "armed=False" in capsys.readouterr().out


@capture_only
def test_capture_body_trailing_semicolon_suppresses_display(ip, capsys):
    before = ip.user_ns.get("_")
    result, n = run(ip, "%%nnx_capture model\ny = model(x)\n12345 + 1;  # quiet")
    assert result.success and result.result is None
    assert n not in ip.user_ns["Out"] and ip.user_ns.get("_") is before
    assert "12346" not in capsys.readouterr().out


@capture_only
def test_capture_body_traceback_shows_the_body_lines(ip, capsys):
    result, _ = run(ip, "%%nnx_capture model\ny = model(x)\nmissing_name_here + 1")
    assert isinstance(result.error_in_exec, NameError)
    out = capsys.readouterr().out
    assert "missing_name_here + 1" in out  # the source line, read back from the cached body


def test_split_body_last_expression_is_displayed_and_stored(ip, capsys):
    result, n = run(ip, "%%nnx_split model nnx.Param ...\nparam = param\n6 * 7")
    assert result.success and result.result == 42
    assert ip.user_ns["Out"][n] == 42 and ip.user_ns["_"] == 42
    assert f"Out[{n}]: 42" in capsys.readouterr().out
    result, n = run(ip, "%%nnx_split model nnx.Param ...\n6 * 8;")
    assert result.result is None and n not in ip.user_ns["Out"]


def test_split_body_error_names_the_body_line(ip):
    with pytest.raises(UsageError, match=r"the cell body raised ZeroDivisionError: division by zero \(cell line 2\)"):
        ip.run_cell_magic("nnx_split", "model nnx.Param ...", "z = 1\nz / 0\n")


def test_a_body_runs_its_statements_then_shows_its_last_expression(ip, capsys):
    ip.user_ns["events"] = []
    result, n = run(ip, "%%nnx_split model nnx.Param ...\nz = 2\nif z:\n    events.append('body')\nz * 21")
    assert result.success and result.result == 42 and f"Out[{n}]: 42" in capsys.readouterr().out
    assert ip.user_ns["z"] == 2 and ip.user_ns["events"] == ["body"]


def test_the_line_is_split_outside_brackets_and_strings(ip, capsys):
    ip.run_line_magic("nnx_split", "model nnx.All(nnx.Param, nnx.PathContains('a b')) ... --as g,p,r")
    out = capsys.readouterr().out
    assert "[1] nnx.All(nnx.Param, nnx.PathContains('a b')) -> p: 0 Variables" in out
    assert "[2] ... -> r: 2 Variables" in out and {"g", "p", "r"} <= set(ip.user_ns)
    ip.run_line_magic(
        "nnx_split", 'model [nnx.Param] nnx.PathContains("x y") nnx.PathContains("""a b""") ... --as g,a,b,c,r'
    )
    out = capsys.readouterr().out
    assert "[1] [nnx.Param] -> a: 2 Variables" in out
    assert '[2] nnx.PathContains("x y") -> b: 0 Variables' in out
    assert '[3] nnx.PathContains("""a b""") -> c: 0 Variables' in out
    for bad in ("f(x", "'open"):
        with pytest.raises(UsageError, match="unbalanced"):
            ip.run_line_magic("nnx_split", f"model {bad}")


@capture_only
def test_only_reads_a_path_a_filter_or_a_path_that_matches_nothing(ip, capsys):
    ip.user_ns.update(model=nnx.Sequential(Block(nnx.Rngs(0))), Block=Block)

    def captured(only):
        ip.user_ns.pop("captured", None)
        ip.run_cell_magic("nnx_capture", f"model --only {only}", "model(x)")
        return ["/".join(map(str, path)) for path, _ in nnx.to_flat_state(ip.user_ns["captured"])]

    for path in ("layers[0]", "layers/0", " layers[0] ", "'layers[0]'"):  # as written, spaces aside; quoted too
        assert captured(path) == ["layers/0/h"], path
    assert captured("Block") == ["layers/0/h"]  # a filter: the Block sows
    assert captured("nnx.Linear") == [] and captured("layers.0.linear") == []  # the Linear inside it does not
    capsys.readouterr()
    # Written as a path, naming nothing in the namespace: a path that matches no module, said so.
    for path in ("blocks[7]", "blocks.7.attn"):
        assert captured(path) == []
        assert f"--only {path} matched no module, so nothing was captured" in capsys.readouterr().out
    # Anything else that fails is refused, naming the error.
    for text, error in [("1/0", "ZeroDivisionError"), ("nnx.Nope", "AttributeError"), ("f(x)", "NameError")]:
        with pytest.raises(
            UsageError,
            match=f"--only '{re.escape(text)}' is not a module path of TARGET, and as an expression it raised {error}",
        ):
            ip.run_cell_magic("nnx_capture", f"model --only {text}", "model(x)")
