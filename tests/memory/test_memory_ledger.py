"""nnx_lab.memory(): every live array under the name that holds it, each buffer counted once, and the
per-device total equal to jax.live_arrays()'s bytes."""

import gc
import sys

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.memory import UNREACHED_NAME


class Net(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(16, 32, rngs=rngs)
        self.bn = nnx.BatchNorm(32, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.drop(self.bn(self.linear(x)))


def live_bytes_per_device():
    """What jax.live_arrays() holds per device: each buffer (device, pointer) once."""
    seen, out = set(), {}
    for a in jax.live_arrays():
        for s in a.addressable_shards:
            key = (s.device.id, s.data.unsafe_buffer_pointer())
            if key not in seen:
                seen.add(key)
                name = f"{s.device.platform}:{s.device.id}"
                out[name] = out.get(name, 0) + s.data.nbytes
    return out


def ledger_and_live(namespace):
    """The ledger and the live arrays' bytes, with no garbage collection between them (an earlier
    test's reference cycle freed in between would change the live arrays)."""
    gc.collect()
    gc.disable()
    try:
        return nnx_lab.memory(namespace=namespace), live_bytes_per_device()
    finally:
        gc.enable()


def rows_of(ledger, holder):
    return {r.group: r for r in ledger.rows if r.holder == holder}


def param_bytes(model, kind=nnx.Param):
    return sum(x.nbytes for x in jax.tree.leaves(nnx.state(model, kind)))


@pytest.fixture
def ns():
    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    grads = jax.tree.map(lambda p: p * 2, nnx.state(model, nnx.Param))
    batch = {"x": jnp.ones((8, 16)), "y": [jnp.zeros((8,), jnp.int32)]}
    return {"model": model, "optimizer": optimizer, "grads": grads, "batch": batch}


def test_each_holder_kind_under_its_name(ns):
    ledger = nnx_lab.memory(namespace=ns)
    model = rows_of(ledger, "model")
    assert model["Param"].kind == "module"
    assert model["Param"].bytes == param_bytes(ns["model"]) and model["Param"].arrays == 4
    assert model["BatchStat"].bytes == param_bytes(ns["model"], nnx.BatchStat) == 2 * 32 * 4
    assert "RngKey" in model and "RngCount" in model
    opt = rows_of(ledger, "optimizer")
    assert opt["mu"].kind == "optimizer" and opt["mu"].bytes == param_bytes(ns["model"]) == opt["nu"].bytes
    assert "step" in opt
    grads = rows_of(ledger, "grads")
    assert grads["Param"].kind == "pytree" and grads["Param"].bytes == param_bytes(ns["model"])
    assert rows_of(ledger, "batch")["array"].bytes == 8 * 16 * 4 + 8 * 4
    text = ledger.to_text()
    for name in ("model", "optimizer", "grads", "batch", "Param", "BatchStat", "mu"):
        assert name in text


def test_per_device_total_equals_the_live_arrays_exactly(ns):
    ledger, expected = ledger_and_live(ns)
    assert {d.device: d.ledger_bytes for d in ledger.devices} == expected
    assert {d.device: d.live_bytes for d in ledger.devices} == expected
    assert sum(r.bytes for r in ledger.rows) == sum(expected.values())
    assert "no memory_stats()" in ledger.to_text()  # CPU: against the live arrays' total only


def test_a_buffer_two_names_reach_is_counted_once_and_marked_shared(ns):
    ns["model_again"] = ns["model"]
    ns["x"] = ns["batch"]["x"]
    ledger, expected = ledger_and_live(ns)
    again = rows_of(ledger, "model_again")["Param"]
    assert again.bytes == 0 and again.shared_bytes == param_bytes(ns["model"]) and again.shared_with == ("model",)
    assert "model_again" in rows_of(ledger, "model")["Param"].shared_with
    x = rows_of(ledger, "x")["array"]
    assert x.bytes == 0 and x.shared_with == ("batch",)
    assert {d.device: d.ledger_bytes for d in ledger.devices} == expected
    assert "shared with model" in ledger.to_text()
    # dropping only one of two names frees nothing: the advice names both
    statements = {f.statement: f.bytes for f in ledger.freeing}
    assert "del model; del model_again" in statements and "del model" not in statements


def test_distinct_array_objects_over_one_buffer_count_once():
    a = jnp.arange(1000.0)
    b = a.addressable_shards[0].data  # jax 0.7: a new Array over the same buffer; 0.10: the same object
    ledger, expected = ledger_and_live({"a": a, "b": b})
    assert rows_of(ledger, "a")["array"].bytes == 4000
    assert rows_of(ledger, "b")["array"].bytes == 0
    assert {d.device: d.ledger_bytes for d in ledger.devices} == expected


def test_output_cache_entries_are_named_and_freed_with_xdel():
    big = jnp.ones((1000,))
    model = Net(nnx.Rngs(1))
    ns = {"Out": {3: model, 5: big}, "_3": model, "_5": big, "_": big}
    ledger = nnx_lab.memory(namespace=ns)
    out3 = rows_of(ledger, "Out[3]")
    assert out3["Param"].kind == "output cache" and out3["Param"].bytes == param_bytes(model)
    assert rows_of(ledger, "Out[5]")["array"].bytes == 4000
    statements = {f.statement: f.bytes for f in ledger.freeing}
    assert statements["%xdel _3"] == sum(r.bytes for r in out3.values())  # every reference IPython keeps
    assert statements["%xdel _5"] == 4000  # `_` holds Out[5] too: %xdel drops it by object
    assert "Out[3]" in ledger.to_text() and "%xdel _3" in ledger.to_text()
    gone = nnx_lab.memory(namespace={"Out": {7: big}})  # no `_7`: the output cache's entry alone
    assert {f.statement for f in gone.freeing} == {"Out.pop(7, None)"}


def test_a_model_held_only_through_out_and_a_split_state():
    model = Net(nnx.Rngs(2))
    graphdef, state = nnx.split(model)
    ledger = nnx_lab.memory(namespace={"state": state, "graphdef": graphdef, "Out": {7: model}})
    assert rows_of(ledger, "state")["Param"].bytes == param_bytes(model)
    assert rows_of(ledger, "Out[7]")["Param"].shared_with == ("state",)


def test_an_array_no_name_reaches_is_unreached_and_explained():
    def make():
        leak = jnp.ones((12345,), jnp.float32)
        return lambda: leak  # a closure: the array's only holder

    keep = make()
    ledger = nnx_lab.memory(namespace={"keep": keep})
    rows = [r for r in ledger.rows if r.holder == UNREACHED_NAME]
    assert rows and sum(r.bytes for r in rows) >= 12345 * 4
    assert "float32[12345]" in rows[0].note and "closure" in rows[0].note
    assert "(unreached)" in ledger.to_text()


def test_a_deleted_model_cycle_is_unreached_until_collected_and_nothing_is_freed():
    model = Net(nnx.Rngs(3))
    model.me = nnx.data([model]) if hasattr(nnx, "data") else [model]  # a reference cycle
    nbytes = param_bytes(model)
    del model
    gc.disable()
    try:
        before = live_bytes_per_device()
        ledger = nnx_lab.memory(namespace={})
        assert live_bytes_per_device() == before  # the ledger frees nothing (not even the cycle)
    finally:
        gc.enable()
    unreached = sum(r.bytes for r in ledger.rows if r.holder == UNREACHED_NAME)
    assert unreached >= nbytes
    gc.collect()


def test_select_restricts_to_names_and_top_and_html_escapes_user_strings(ns):
    ns["<b>evil</b>"] = jnp.ones(3)
    ledger = nnx_lab.memory(namespace=ns)
    html = ledger._repr_html_()
    assert "<b>evil</b>" not in html and "&lt;b&gt;evil&lt;/b&gt;" in html
    only = ledger.select(["grads"])
    assert {r.holder for r in only.rows} == {"grads"}
    text = ledger.to_text(top=1)
    assert "optimizer" in text and "grads " not in text and "smaller holders not shown" in text
    d = ledger.to_dict()
    assert {"devices", "rows", "freeing"} <= set(d) and d["rows"][0]["holder"]


def test_to_pandas_has_one_row_per_ledger_row(ns):
    pd = pytest.importorskip("pandas")
    ledger = nnx_lab.memory(namespace=ns)
    frame = ledger.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(ledger.rows)
    assert frame["bytes"].sum() == ledger.total()


def test_the_ledger_holds_no_array(ns):
    ledger, before = ledger_and_live(ns)
    del ns["grads"]
    gc.collect()  # flax 0.11's State leaves form cycles: freed by the collector
    after = live_bytes_per_device()
    assert sum(before.values()) - sum(after.values()) == ledger.holder_bytes("grads")


def test_bad_namespace_and_arguments_without_a_step_are_one_line():
    with pytest.raises(TypeError, match="namespace must be a dict"):
        nnx_lab.memory(namespace=[1])
    with pytest.raises(TypeError, match="arguments were given without a step"):
        nnx_lab.memory(None, 1)


def test_self_referencing_values_are_walked_safely():
    loop = [jnp.ones(5)]
    loop.append(loop)  # jax's own flattening would recurse until RecursionError (and leave its guard raised)
    model = Net(nnx.Rngs(4))
    model.parent = nnx.data(model) if hasattr(nnx, "data") else model  # a module cycle: flax's walk
    ledger = nnx_lab.memory(namespace={"loop": loop, "model": model})
    assert rows_of(ledger, "model")["Param"].bytes == param_bytes(model)

    class N(nnx.Module):  # a class statement a few frames deep still works (no leaked recursion depth)
        pass

    assert N() is not None


@pytest.mark.skipif(not hasattr(nnx, "var_defaults"), reason="hijax Variables came in flax 0.12")
def test_hijax_variables_land_under_their_declared_type():
    with nnx.var_defaults(hijax=True):
        model = nnx.Linear(8, 16, rngs=nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    ledger, expected = ledger_and_live({"model": model, "optimizer": optimizer})
    assert rows_of(ledger, "model")["Param"].bytes == (8 * 16 + 16) * 4
    assert rows_of(ledger, "optimizer")["mu"].bytes == (8 * 16 + 16) * 4
    assert {d.device: d.ledger_bytes for d in ledger.devices} == expected


def test_without_a_shell_or_namespace_the_ledger_says_how_to_name_holders(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)  # a script that never imported IPython
    ledger = nnx_lab.memory()
    assert "namespace=globals()" in ledger.to_text()
    assert all(r.holder == UNREACHED_NAME for r in ledger.rows)


def test_an_object_that_is_no_pytree_holds_what_its_attributes_reach():
    # Gemma's Sampler keeps its transformer and its own arrays: before, they were "(unreached)" ("an
    # object outside the namespace") though `sampler` is a name.
    class Sampler:
        def __init__(self, transformer):
            self.transformer = transformer
            self.cache = {"k": jnp.ones((7, 33), jnp.float32)}
            self.buffer = jnp.zeros((5, 31), jnp.int32)

    model = Net(nnx.Rngs(0))
    ns = {"sampler": Sampler(model)}
    ledger, expected = ledger_and_live(ns)
    sampler = rows_of(ledger, "sampler")
    assert sampler["Param"].kind == "object" and sampler["Param"].bytes == param_bytes(model)
    assert sampler["array"].bytes == 7 * 33 * 4 + 5 * 31 * 4
    assert "del sampler" in {f.statement for f in ledger.freeing}
    assert {d.device: d.ledger_bytes for d in ledger.devices} == expected


def test_an_object_keeping_the_namespace_does_not_hold_every_name():
    # A widget displayed in Out[8] that keeps the shell's namespace: "shared with Out[8]" on every
    # holder (optimizer, grads, ...) and `%xdel _8` in every statement, before.
    class Panel:
        def __init__(self, namespace):
            self.namespace = namespace

    ns = {"__name__": "__main__", "grads": {"g": jnp.ones((9, 9))}}
    ns["panel"] = Panel(ns)
    ledger = nnx_lab.memory(namespace=ns)
    assert rows_of(ledger, "grads")["array"].shared_with == ()
    assert not rows_of(ledger, "panel")


@pytest.mark.skipif(not compat.has("nnx.capture"), reason=f"needs flax>={compat.needed('nnx.capture')}")
def test_nnx_labs_own_capture_holds_its_captured_state():
    cap_model = nnx.Linear(3, 4, rngs=nnx.Rngs(1))
    with nnx_lab.Capture(cap_model, methods=True) as cap:
        cap_model(jnp.ones((2, 3)))
    ledger = nnx_lab.memory(namespace={"cap": cap})
    assert rows_of(ledger, "cap")["Intermediate"].bytes == 2 * 4 * 4  # the Linear's output
