"""Inputs found by running flax's own docs_nnx guides with nnx_lab added (tools/flax_guides.py):
each test is one construct a guide makes that nnx_lab failed on."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import nnx_lab


class Sows(nnx.Module):
    """extracting_intermediates.ipynb: a module that sows, then `nnx.state(model, nnx.Intermediate)`."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)

    def __call__(self, x):
        y = self.linear(x)
        self.sow(nnx.Intermediate, "features", y)
        self.sow(nnx.Intermediate, "features", y * 2)
        return y


class TwoLayer(nnx.Module):
    def __init__(self, rngs):
        self.linear1 = nnx.Linear(2, 2, rngs=rngs)
        self.linear2 = nnx.Linear(2, 2, rngs=rngs)


def sown():
    model = Sows(nnx.Rngs(0))
    model(jnp.ones((1, 2)))
    return model


def leaves(obj):
    return jax.tree.leaves(nnx.state(obj) if not isinstance(obj, nnx.State) else obj)


def test_split_report_of_a_variable_holding_a_tuple_of_arrays():
    """A sown Intermediate holds a tuple; the snapshot shows one row per array (features[0],
    features[1]); the report counts it as one Variable of the filter that took it (a KeyError before)."""
    model = sown()
    report = nnx_lab.split_report(model, nnx.Param, ...)
    param, rest = report.filters
    assert (param.count, rest.count) == (2, 1)
    assert rest.paths == (("features",),) and rest.bytes == 3 * 4 * 2
    assert [r.row.path_text for r in report.rows if r.taken_by == 1] == ["features[0]", "features[1]"]
    assert report.to_text().splitlines()[0] == "split of Sows: 3 Variables into 2 filters"
    state = nnx.state(model, nnx.Intermediate)
    report = nnx_lab.split_report(state, nnx.Param, ...)
    assert [f.count for f in report.filters] == [0, 1]


def test_split_report_of_a_model_with_a_function_attribute():
    """surgery.ipynb monkey-patches `model.linear2 = awesome_layer`: nnx.state holds the function
    as a leaf; the report lists it (no array) in the filter that takes it (a KeyError before)."""
    model = TwoLayer(nnx.Rngs(0))

    def awesome_layer(x):
        return x

    model.linear2 = awesome_layer
    report = nnx_lab.split_report(model, nnx.Param, ...)
    in_state = [p for p, _ in nnx.to_flat_state(nnx.state(model))]
    if ("linear2",) not in in_state:
        pytest.skip("this flax keeps a function attribute out of nnx.state (static)")
    assert [f.count for f in report.filters] == [2, 1]
    (row,) = [r.row for r in report.rows if r.taken_by == 1]
    assert row.path == ("linear2",) and row.type == "function" and row.nbytes in (0, None)
    assert "linear2" in str(report.to_dict()["rows"]["path"])


@pytest.mark.parametrize("make", [sown, lambda: nnx.state(sown(), nnx.Intermediate)], ids=["module", "state"])
def test_split_cell_round_trip_with_sown_tuples_leaves_the_model(ip, make):
    obj = make()
    ip.user_ns.update(obj=obj, jax=jax, nnx=nnx)
    before = leaves(obj)
    ip.run_cell_magic("nnx_split", "obj nnx.Param ... --as g,p,r", "r = jax.tree.map(lambda x: x, r)\n")
    after = leaves(obj)
    assert len(before) == len(after) and all(np.array_equal(a, b) for a, b in zip(before, after))
    assert isinstance(ip.user_ns["r"], nnx.State)


def test_snapshot_of_an_eval_shape_model_made_under_set_mesh():
    """flax_gspmd.ipynb: `jax.eval_shape` under `jax.set_mesh` gives ShapeDtypeStructs whose
    NamedSharding is on an AbstractMesh (no devices); snapshot, %nnx_split and watch failed on it."""
    AxisType = getattr(jax.sharding, "AxisType", None)
    if AxisType is None or not hasattr(jax, "set_mesh"):
        pytest.skip("this jax has no jax.set_mesh / explicit mesh axes")
    mesh = jax.make_mesh((1,), ("model",), axis_types=(AxisType.Explicit,))
    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model"))
    with jax.set_mesh(mesh):
        abs_model = jax.eval_shape(lambda: nnx.Linear(4, 8, kernel_init=init, rngs=nnx.Rngs(0)))
    rows = {r.path_text: r for r in nnx_lab.snapshot(abs_model).rows}
    assert rows["kernel"].status == "abstract" and "model" in (rows["kernel"].sharding or "")
    assert rows["kernel"].devices == "abstract mesh \u00d71"
    assert nnx_lab.watch(abs_model, display=False).status["state"] == "live"


# --------------------------------------------------------------------------- capture meets the model's graph


class Count(nnx.Variable):
    pass


class Counted(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)
        self.count = Count(jnp.array(0))
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        self.sow(nnx.Intermediate, "h", x)  # (a sow inside the vmap: flax's capture would need it too)
        return self.drop(self.linear(x))


def _own_split(model):  # filters_guide.ipynb: a hand-written split that raises on an unmatched path
    def split(node, *filters):
        for path, value in nnx.to_flat_state(nnx.state(node)):
            if not any(nnx.filterlib.to_predicate(f)(path, value) for f in filters):
                raise ValueError(f"No filter matched {path = } {value = }")

    return lambda m: split(m, nnx.Param, Count, nnx.RngState)


# Each returns the call a guide makes, prepared (as the guide does) before any capture.
def _split_by_type(model):  # nnx_basics.ipynb: filters that name every type, no final `...`
    return lambda m: nnx.split(m, nnx.Param, Count, nnx.RngState)


def _vmap_state_axes(model):  # transforms.ipynb: nnx.StateAxes naming each type
    axes = nnx.StateAxes({nnx.Param: None, Count: None, nnx.RngState: None})
    return lambda m: nnx.vmap(lambda m, x: m.linear(x), in_axes=(axes, 0))(m, jnp.ones((4, 2)))


def _vmap_prefix(model):  # randomness.ipynb: in_axes from nnx.prefix, computed before the capture
    if not hasattr(nnx, "prefix"):
        pytest.skip("this flax has no nnx.prefix")
    in_axes = nnx.prefix(model, {"dropout": 0, ...: None}, graph=False)

    @nnx.with_rngs(split=4, only="dropout", graph=False)
    @nnx.vmap(in_axes=(in_axes, None), out_axes=0, graph=False)
    def sample(m, x):
        return nnx.relu(m.drop(m.linear(x)))

    return lambda m: sample(m, jnp.ones((1, 2)))


@pytest.mark.needs_flax("nnx.capture")
@pytest.mark.parametrize(
    "prepare",
    [_split_by_type, _vmap_state_axes, _vmap_prefix, _own_split],
    ids=["split", "state_axes", "prefix", "own_split"],
)
def test_capture_around_a_call_that_needs_the_graph_as_it_was_is_one_line(ip, prepare):
    """Under %%nnx_capture, these calls meet the `__captures__` entries every armed module holds
    (flax's own nnx.capture fails the same way); the magic says so in one line instead of a raw
    flax/jax traceback (for nnx.prefix, jax's own AttributeError while wording the mismatch)."""
    from IPython.core.error import UsageError

    model = Counted(nnx.Rngs(0, dropout=1))
    call = prepare(model)
    call(model)  # works without a capture
    before = jax.tree.map(np.asarray, nnx.state(model, nnx.Param))
    ip.user_ns.update(model=model, call=call)
    ip.user_ns.pop("captured", None)
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("nnx_capture", "model", "out = call(model)\n")
    text = str(info.value)
    assert "\n" not in text and "upstream limit" in text and "__captures__" in text
    assert "captured" not in ip.user_ns and "__captures__" not in vars(model)
    after = nnx.state(model, nnx.Param)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)))
