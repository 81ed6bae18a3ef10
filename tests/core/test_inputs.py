"""snapshot() accepts every kind of NNX object a user holds, and walks it with flax's graph API."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.graph import path_text


def paths(snap):
    return [r.path for r in snap.rows]


def test_module_with_every_container(net):
    snap = nnx_lab.snapshot(net)
    expected = [p for p, _ in nnx.to_flat_state(nnx.state(net))]
    assert paths(snap) == expected
    assert snap[("blocks", 1, "bn", "mean")].type == "BatchStat"
    assert snap["heads.a.kernel"].shape == (8, 2)
    assert snap["seq.layers[0].kernel"].dtype == "float32"
    assert snap.nodes[("blocks",)] == "List" and snap.nodes[("heads",)] == "Dict"
    assert snap.nodes[("seq",)] == "Sequential" and snap.nodes[("blocks", 0)] == "Block"
    assert snap.root_type == "Net"
    step = snap["step"]
    assert (step.type, step.dtype, step.status, step.stats["mean"]) == ("Variable", "int32", "ok", 0.0)


def test_state_and_split_states_and_pure_dict(net):
    full = nnx_lab.snapshot(net)
    assert paths(nnx_lab.snapshot(nnx.state(net))) == paths(full)
    _, params, rest = nnx.split(net, nnx.Param, ...)
    p = nnx_lab.snapshot(params)
    assert {r.type for r in p.rows} == {"Param"}
    assert len(p) + len(nnx_lab.snapshot(rest)) == len(full)
    pure = nnx_lab.snapshot(nnx.to_pure_dict(nnx.state(net)))
    assert paths(pure) == paths(full)
    assert pure["blocks[0].linear.kernel"].type == "Array"
    assert pure["blocks[0].linear.kernel"].stats == full["blocks[0].linear.kernel"].stats


def test_user_variable_subclass_and_metadata():
    class Lora(nnx.Param):
        pass

    class M(nnx.Module):
        def __init__(self):
            self.w = Lora(jnp.ones((2, 2)), note="low rank")

    row = nnx_lab.snapshot(M())["w"]
    assert row.type == "Lora"
    assert row.metadata == "note='low rank'"  # flax's default metadata is left out


def test_linen_module_through_bridge():
    model = nnx.bridge.ToNNX(nn.Dense(5), rngs=nnx.Rngs(0))
    nnx.bridge.lazy_init(model, jnp.ones((1, 3)))
    snap = nnx_lab.snapshot(model)
    assert snap["kernel"].shape == (3, 5) and snap["kernel"].type == "Param"
    assert snap["bias"].stats["zero_frac"] == 1.0


def test_abstract_model_from_eval_shape(net):
    abstract = nnx.eval_shape(lambda: type(net)(nnx.Rngs(0)))
    snap = nnx_lab.snapshot(abstract)
    kernel = snap["blocks[0].linear.kernel"]
    assert (kernel.status, kernel.shape, kernel.nbytes, kernel.stats) == ("abstract", (4, 8), 128, None)
    assert snap.totals["all"]["bytes"] == nnx_lab.snapshot(net).totals["all"]["bytes"]


def test_single_variable():
    snap = nnx_lab.snapshot(nnx.Param(jnp.arange(4.0)))
    assert snap.rows[0].path == () and snap.rows[0].stats["max"] == 3.0


@pytest.mark.parametrize("bad", [42, "model", object(), None])
def test_not_a_model_is_a_clear_type_error(bad):
    with pytest.raises(TypeError, match="expected an nnx.Module"):
        nnx_lab.snapshot(bad)


def test_shared_variable_is_one_row_counted_once():
    class Tied(nnx.Module):
        def __init__(self, rngs):
            self.embed = nnx.Embed(10, 4, rngs=rngs)
            self.out = nnx.Linear(4, 4, rngs=rngs)
            self.head = self.embed  # shared module
            self.w = self.out.kernel  # shared Variable

    model = Tied(nnx.Rngs(0))
    snap = nnx_lab.snapshot(model)
    assert [path_text(r.path) for r in snap.rows] == ["embed.embedding", "out.bias", "out.kernel"]
    assert [path_text(a) for a in snap["embed.embedding"].aliases] == ["head.embedding"]
    assert [path_text(a) for a in snap["out.kernel"].aliases] == ["w"]
    assert snap["head.embedding"] is snap["embed.embedding"]
    assert snap.totals["Param"] == {"count": 3, "size": 40 + 4 + 16, "bytes": 4 * 60}


def test_statuses_never_raise():
    class Odd(nnx.Module):
        def __init__(self):
            self.key = nnx.Variable(jax.random.key(0))
            self.gone = nnx.Param(jnp.ones(3))
            self.text = nnx.Variable("hello")
            self.host = nnx.Variable(np.arange(3.0))
            self.empty = nnx.Param(jnp.zeros((0, 4)))

    model = Odd()
    compat.get_value(model.gone).delete()
    snap = nnx_lab.snapshot(model)
    status = {path_text(r.path): r.status for r in snap.rows}
    assert status == {"empty": "ok", "gone": "deleted", "host": "ok", "key": "prng_key", "text": "non_numeric"}
    assert snap["key"].dtype == "key<fry>" and snap["key"].stats is None
    assert snap["gone"].shape == (3,) and snap["gone"].stats is None
    assert snap["host"].devices == "host" and snap["host"].stats["max"] == 2.0
    assert snap["empty"].stats is None
    assert "gone" in repr(snap) and "deleted" in snap._repr_html_()


def test_donated_buffer_shows_deleted():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    kernel = compat.get_value(model.kernel)
    jax.jit(lambda x: x + 1, donate_argnums=0)(kernel)
    if not kernel.is_deleted():  # a backend that ignores donation
        kernel.delete()
    snap = nnx_lab.snapshot(model)
    assert snap["kernel"].status == "deleted"
    assert snap["bias"].status == "ok"


def test_tracers_inside_jit_get_a_status():
    seen = {}

    @nnx.jit
    def step(model):
        seen["snap"] = nnx_lab.snapshot(model)
        return model(jnp.ones((1, 2)))

    step(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
    assert {r.status for r in seen["snap"].rows} == {"tracer"}
    assert seen["snap"]["kernel"].shape == (2, 2)


def test_stats_false_runs_nothing_on_device(net):
    snap = nnx_lab.snapshot(net, stats=False)
    assert all(r.stats is None for r in snap.rows)
    assert snap["blocks[0].linear.kernel"].status == "ok"


@pytest.mark.needs_flax("nnx.List")
def test_static_containers_are_not_nodes_but_empty_modules_are():
    class M(nnx.Module):
        def __init__(self, rngs):
            self.drop = nnx.Dropout(0.5, rngs=rngs)  # holds broadcast_dims=(), a static tuple
            self.act = nnx.Sequential()  # a Module with no Variables
            self.d = nnx.Dict({"w": nnx.Param(jnp.ones(2))})

    snap = nnx_lab.snapshot(M(nnx.Rngs(0)))
    assert ("drop", "broadcast_dims") not in snap.nodes
    assert snap.nodes[("act",)] == "Sequential" and snap.nodes[("d",)] == "Dict"
    assert snap.nodes[("drop", "rngs")] == "RngStream"
