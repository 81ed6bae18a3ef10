"""%nnx_split / %%nnx_split: binding, the functional round trip, and every bad input leaving the model as it was."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen

from nnx_lab.core import compat


@pytest.fixture
def ip(ip):
    """The shared shell, with jax/nnx and a small model in the user namespace."""
    ip.user_ns.update(nnx=nnx, jax=jax, jnp=jnp)
    ip.run_cell("model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))")
    yield ip
    for name in ("graphdef", "param", "batch_stat", "rest", "g", "p", "r", "half", "text", "k", "other"):
        ip.user_ns.pop(name, None)


def cell(ip, line, body):
    ip.run_cell_magic("nnx_split", line, body)


def test_line_magic_binds_default_names(ip):
    ip.run_line_magic("nnx_split", "model nnx.Param nnx.BatchStat ...")
    assert isinstance(ip.user_ns["graphdef"], nnx.GraphDef)
    assert len(list(nnx.to_flat_state(ip.user_ns["param"]))) == 4
    assert len(list(nnx.to_flat_state(ip.user_ns["batch_stat"]))) == 2
    assert nnx.merge(ip.user_ns["graphdef"], ip.user_ns["param"], ip.user_ns["batch_stat"], ip.user_ns["rest"])


def test_line_magic_filters_with_spaces_and_as(ip, capsys):
    ip.run_line_magic("nnx_split", "model nnx.All(nnx.Param, nnx.PathContains('kernel')) ... --as g,k,other")
    assert [p for p, _ in nnx.to_flat_state(ip.user_ns["k"])] == [("layers", 0, "kernel")]
    text = capsys.readouterr().out  # the report's plain text names what was bound, not the defaults
    assert "-> k: 1 Variable" in text and "-> other:" in text and "-> all:" not in text and "-> rest:" not in text


def test_cell_updates_the_model_in_place(ip):
    model = ip.user_ns["model"]
    cell(ip, "model nnx.Param ...", "param = jax.tree.map(lambda p: p * 0 + 7, param)")
    assert np.all(np.asarray(compat.get_value(model.layers[0].kernel)) == 7)
    assert np.all(np.asarray(compat.get_value(model.layers[1].var)) == 1)  # not a Param: untouched


def test_cell_jitted_function_of_states(ip):
    body = (
        "@jax.jit\n"
        "def scale(params, factor):\n"
        "    return jax.tree.map(lambda p: p * factor, params)\n"
        "param = scale(param, 2.0)"
    )
    before = np.asarray(compat.get_value(ip.user_ns["model"].layers[0].kernel))
    cell(ip, "model nnx.Param ...", body)
    assert np.allclose(np.asarray(compat.get_value(ip.user_ns["model"].layers[0].kernel)), before * 2)


def test_cell_merge_into_a_new_model_leaves_target(ip):
    model = ip.user_ns["model"]
    before = frozen(model)
    cell(ip, "model nnx.Param ... --merge-into half", "param = jax.tree.map(lambda p: p * 0.5, param)")
    assert_unchanged(model, before)
    half = ip.user_ns["half"]
    assert np.allclose(
        np.asarray(compat.get_value(half.layers[0].kernel)), np.asarray(compat.get_value(model.layers[0].kernel)) * 0.5
    )


def test_cell_no_update(ip):
    model = ip.user_ns["model"]
    before = frozen(model)
    cell(ip, "model nnx.Param ... --no-update", "param = jax.tree.map(lambda p: p * 0, param)")
    assert_unchanged(model, before)


@pytest.mark.parametrize(
    "line, body, message",
    [
        ("missing nnx.Param ...", "pass", "TARGET 'missing': name 'missing' is not defined"),
        (
            "42 nnx.Param ...",
            "pass",
            "TARGET '42' is a int: nnx.split takes an nnx.Module, nnx.State, nnx.Optimizer, nnx.Rngs or a dict/list of Variables or arrays",
        ),
        ("model nnx.Nope ...", "pass", "filter 1 `nnx.Nope` raised AttributeError"),
        (
            "model (lambda p, v: 1 / 0) ...",
            "pass",
            "filter 1 ((lambda p, v: 1 / 0)) raised ZeroDivisionError on layers[0].bias",
        ),
        (
            "model ... nnx.Param",
            "pass",
            "`...` matches everything, so it can only be the last filter (it is filter 1 of 2)",
        ),
        ("model nnx.Param ... --as g,p", "pass", "--as gives 2 names for 3 results"),
        ("model nnx.Param ... --as g,p,class", "pass", "--as 'class' is a Python keyword"),
        ("model nnx.Param ... --as g,p,9x", "pass", "--as '9x' is not a valid Python name"),
        ("model nnx.Param", "pass", "not exhaustive: 2 Variables matched no filter (layers[1].mean, layers[1].var)"),
        (
            "model nnx.Param ...",
            "param = 1 / 0",
            "the cell body raised ZeroDivisionError: division by zero (cell line 1); the model is unchanged",
        ),
        (
            "model nnx.Param ...",
            "param = [1, 2]",
            "cannot merge back, the model is unchanged: `param` is now a list, not an nnx.State",
        ),
        (
            "model nnx.Param ...",
            "param = jax.tree.map(lambda p: p[..., :1], param)",
            "`param` layers[0].kernel changed from (2, 3) float32 to (2, 1) float32",
        ),
        (
            "model nnx.Param ...",
            "param = jax.tree.map(lambda p: p.astype(jnp.int32), param)",
            "changed from (3,) float32 to (3,) int32",
        ),
        ("model nnx.Param ...", "del param['layers'][0]", "`param` lost layers[0].bias, layers[0].kernel"),
        (
            "model nnx.Param ... --merge-into text",
            "pass",
            "--merge-into text: that name holds a str, not a Module; add --overwrite",
        ),
        ("model nnx.Param ... --merge-into x --no-update", "pass", "choose one of --merge-into NAME and --no-update"),
    ],
)
def test_bad_input_is_one_line_and_model_unchanged(ip, line, body, message):
    ip.user_ns["text"] = "keep me"
    model = ip.user_ns["model"]
    before = frozen(model)
    with pytest.raises(UsageError) as info:
        cell(ip, line, body)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert_unchanged(model, before)
    assert ip.user_ns["text"] == "keep me"


def test_overwrite_gives_consent(ip):
    ip.user_ns["text"] = "replace me"
    cell(ip, "model nnx.Param ... --merge-into text --overwrite", "pass")
    assert isinstance(ip.user_ns["text"], nnx.Sequential)


def test_line_magic_rejects_cell_options(ip):
    with pytest.raises(UsageError, match="apply to the cell magic"):
        ip.run_line_magic("nnx_split", "model nnx.Param ... --no-update")


def test_help_is_real(ip):
    doc = ip.magics_manager.magics["line"]["nnx_split"].__doc__
    assert "%%nnx_split model nnx.Param ..." in doc and "--merge-into" in doc and "--as" in doc


def test_in_place_edit_then_raise_leaves_model_unchanged(ip):
    """split hands out the model's own Variables; the body must get detached ones."""
    model = ip.user_ns["model"]
    before = frozen(model)
    body = (
        "from nnx_lab.core import compat\n"
        "compat.set_value(param['layers'][0]['kernel'], compat.get_value(param['layers'][0]['kernel']) * 0)\nraise ValueError('late')"
    )
    with pytest.raises(UsageError, match="the cell body raised ValueError: late"):
        cell(ip, "model nnx.Param ...", body)
    assert_unchanged(model, before)


def test_donated_buffer_in_body_is_refused(ip):
    model = ip.user_ns["model"]
    body = (
        "from nnx_lab.core import compat\n"
        "jax.jit(lambda x: x + 1, donate_argnums=0)(compat.get_value(param['layers'][0]['bias']))"
    )
    kernel_before = np.asarray(compat.get_value(model.layers[0].kernel))
    try:
        cell(ip, "model nnx.Param ...", body)
    except UsageError as e:
        assert "layers[0].bias was deleted (a donated buffer?)" in str(e)
        assert "deleted in the model too" in str(e)
    else:  # a backend that ignores donation: nothing was deleted, the merge is a no-op
        assert not compat.get_value(model.layers[0].bias).is_deleted()
    assert np.array_equal(np.asarray(compat.get_value(model.layers[0].kernel)), kernel_before)


def test_state_target_is_updated_in_place(ip):
    ip.run_cell("st = nnx.state(model)")
    cell(ip, "st nnx.Param ...", "param = jax.tree.map(lambda p: p * 0 + 5, param)")
    assert np.all(np.asarray(compat.get_value(ip.user_ns["st"]["layers"][0]["kernel"])) == 5)
    ip.user_ns.pop("st")
