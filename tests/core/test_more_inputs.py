"""Inputs found in flax's guides: every one described, split and merged as flax itself would."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import linen as nn
from flax import nnx
from flax.nnx import bridge
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.snapshot import snapshot


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

    def __str__(self):
        raise RuntimeError("no str")


class Vocab(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.vocab = nnx.Variable(np.array(["<pad>", "the", "cat"]))
        self.objs = nnx.Variable(np.array([object(), 1], dtype=object))


def rows(obj):
    return {nnx_lab.core.graph.path_text(r.path): (r.type, r.status) for r in snapshot(obj).rows}


@pytest.fixture
def ip(ip):
    ip.user_ns.update(nnx=nnx, jax=jax, jnp=jnp)
    yield ip
    for name in (
        "model",
        "graphdef",
        "param",
        "rest",
        "state",
        "opt",
        "opt_state",
        "rngs",
        "variables",
        "params",
        "batch_stats",
    ):
        ip.user_ns.pop(name, None)


def test_split_cell_carries_string_and_object_arrays_through(ip):
    model = ip.user_ns["model"] = Vocab()
    ip.run_cell_magic("nnx_split", "model nnx.Param ...", "param = jax.tree.map(lambda p: p * 2, param)")
    assert list(compat.get_value(model.vocab)) == ["<pad>", "the", "cat"] and compat.get_value(model.objs)[1] == 1
    assert float(compat.get_value(model.lin.kernel).sum()) != 0
    before = frozen(model.lin)
    with pytest.raises(UsageError, match=r"`rest` vocab changed from \(3,\) <U5 to \(\) str"):
        ip.run_cell_magic("nnx_split", "model nnx.Param ...", "rest['vocab'] = nnx.Variable('x')")
    assert_unchanged(model.lin, before)


def test_metadata_and_keys_whose_repr_raises_show_as_text():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    model.extra = nnx.Param(jnp.ones(2), tag=BadRepr())
    snap = snapshot(model)
    row = snap["extra"]
    assert row.metadata == "tag=<repr failed: RuntimeError>"
    snap.to_text(), snap._repr_html_()
    assert "tag=<repr failed: RuntimeError>" in str(snap.to_dict())
    keyed = snapshot({BadRepr(): jnp.ones(2)})
    assert "[<repr failed: RuntimeError>]" in keyed.to_text()
    assert "<str failed: RuntimeError>" in str(keyed.to_dict())


def test_metadata_repr_raising_in_the_magics(ip, capsys):
    model = ip.user_ns["model"] = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    model.extra = nnx.Param(jnp.ones(2), tag=BadRepr())
    ip.run_line_magic("nnx_snapshot", "model --as snap")  # raised RuntimeError before
    ip.run_line_magic("nnx_split", "model nnx.Param ...")
    assert ip.user_ns.pop("snap")["extra"].metadata == "tag=<repr failed: RuntimeError>"
    assert len(list(nnx.to_flat_state(ip.user_ns["param"]))) == 3


def test_optimizer_rngs_and_linen_dicts_are_split_like_nnx_split(ip):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    ip.user_ns["opt"] = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    ip.run_line_magic("nnx_split", "opt nnx.OptState ...")
    assert len(list(nnx.to_flat_state(ip.user_ns["opt_state"]))) == 6
    ip.user_ns["rngs"] = nnx.Rngs(0, dropout=1)
    ip.run_line_magic("nnx_split", "rngs ...")
    assert len(list(nnx.to_flat_state(ip.user_ns["rest"]))) == 4
    variables = ip.user_ns["variables"] = nn.Dense(3).init(jax.random.key(0), jnp.ones((1, 2)))
    ip.run_cell_magic("nnx_split", "variables ...", "rest = jax.tree.map(lambda x: x + 1, rest)")
    assert float(variables["params"]["bias"].sum()) == 3.0


def test_optimizer_is_watched_and_snapshotted():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    got = rows(opt)
    assert got["step"] == ("OptState", "ok") and got["opt_state[0].mu.kernel"] == ("OptVariable", "ok")
    assert sum(1 for p in got if ".mu." in p or ".nu." in p) == 4  # Adam's mu and nu per parameter
    viewer = nnx_lab.watch(opt, display=False)
    assert viewer.status["state"] == "live" and viewer._watcher.snapshot.totals["all"]["count"] == len(got)


def test_a_module_shared_through_plain_containers_keeps_its_aliases():
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    snap = snapshot({"a": {"b": m}, "c": m})
    assert [(r.path, r.aliases) for r in snap.rows] == [
        (("a", "b", "bias"), (("c", "bias"),)),
        (("a", "b", "kernel"), (("c", "kernel"),)),
    ]
    assert snap.totals["all"]["count"] == 2
    listed = snapshot([m, m])
    assert [r.aliases for r in listed.rows] == [((1, "bias"),), ((1, "kernel"),)]


def test_python_numbers_are_rows_exactly_when_flax_puts_them_in_the_state():
    if not hasattr(nnx, "data"):
        pytest.skip("nnx.data is newer than this flax")

    class Scaled(nnx.Module):
        def __init__(self):
            self.scale = nnx.data(2.5)
            self.count = nnx.data(3)
            self.width = 8  # static: part of the graph definition, not of the state
            self.w = nnx.Param(jnp.ones(2))

    model = Scaled()
    in_state = {path[0] for path, _ in nnx.to_flat_state(nnx.state(model))}
    snap = snapshot(model)
    expected = {"scale": ("float", "ok"), "count": ("int", "ok"), "w": ("Param", "ok")}
    assert {r.path[0]: (r.type, r.status) for r in snap.rows} == {k: v for k, v in expected.items() if k in in_state}
    assert "width" not in in_state and "w" in in_state
    if "scale" in in_state:  # flax 0.12 keeps numbers marked nnx.data in the state; 0.11 does not
        assert snap["scale"].stats["mean"] == 2.5


def test_sown_tuples_are_one_row_per_array():
    class Sower(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "h", (x, x * 2))
            return x

    model = Sower()
    model(jnp.ones((1, 2)))
    model(jnp.ones((1, 2)))
    got = rows(model)
    assert got == {f"h[{c}][{i}]": ("Intermediate", "ok") for c in (0, 1) for i in (0, 1)}
    assert snapshot(model)["h[1][1]"].stats["mean"] == 2.0


def test_tolinen_shows_the_wrapped_modules_variables_and_linen_collections_are_types():
    tl = bridge.ToLinen(nnx.Linear, args=(2, 3))
    snap = snapshot(tl)
    assert snap.root_type == "ToLinen(Linear)"
    assert {r.path: (r.type, r.status, r.shape) for r in snap.rows} == {
        ("bias",): ("Param", "abstract", (3,)),
        ("kernel",): ("Param", "abstract", (2, 3)),
    }

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.BatchNorm(use_running_average=False)(nn.Dense(3)(x))

    variables = Net().init(jax.random.key(0), jnp.ones((2, 2)))
    got = rows(variables)
    assert got["params.Dense_0.kernel"] == ("params", "ok")
    assert got["batch_stats.BatchNorm_0.mean"] == ("batch_stats", "ok")
    assert set(snapshot(variables).totals) == {"params", "batch_stats", "all"}
    assert {r.type for r in snapshot(tl.init(jax.random.key(0), jnp.ones((1, 2)))).rows} == {"params"}
    assert {r.type for r in snapshot({"a": jnp.ones(2)}).rows} == {"Array"}  # not a Linen dict
