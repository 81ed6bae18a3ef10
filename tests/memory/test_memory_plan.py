"""nnx_lab.memory(step, *args): the step compiled, never run; XLA's memory analysis per device, the
arguments whose donation would save memory, and one-line errors for bad input."""

import gc

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import nnx_lab

F32 = jnp.float32


class Net(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(32, 64, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.out = nnx.Linear(64, 8, rngs=rngs)
        self.calls = nnx.Variable(jnp.array(0, jnp.int32))

    def __call__(self, x):
        self.calls[...] = self.calls[...] + 1
        return self.out(self.drop(nnx.relu(self.linear(x))))


def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    if hasattr(optimizer, "model"):  # flax < 0.11's Optimizer holds the model
        optimizer.update(grads)
    else:
        optimizer.update(model, grads)
    return loss


def analysis(compiled):
    a = compiled.memory_analysis()
    return {
        "argument": a.argument_size_in_bytes,
        "output": a.output_size_in_bytes,
        "alias": a.alias_size_in_bytes,
        "temp": a.temp_size_in_bytes,
        "generated_code": a.generated_code_size_in_bytes,
    }


def host(x):
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def live_bytes():
    seen, total = set(), 0
    for a in jax.live_arrays():
        for s in a.addressable_shards:
            key = (s.device.id, s.data.unsafe_buffer_pointer())
            if key not in seen:
                seen.add(key)
                total += s.data.nbytes
    return total


def test_abstract_inputs_report_what_xla_reports():
    def loss(w, x):
        return (jnp.tanh(x @ w) @ w.T).sum()

    step = jax.grad(loss)  # the backward pass keeps activations: XLA's temporaries

    w = jax.ShapeDtypeStruct((256, 256), F32)
    x = jax.ShapeDtypeStruct((128, 256), F32)
    plan = nnx_lab.memory(step, w, x)
    assert plan.analysis == analysis(jax.jit(step).lower(w, x).compile())
    assert plan.analysis["temp"] > 0 and plan.analysis["argument"] == (256 * 256 + 128 * 256) * 4
    text = plan.to_text()
    assert "temporaries" in text and "compiled, not run" in text and "loss" in plan.step_name
    if jax.devices()[0].memory_stats() is None:
        assert "no memory limit" in text


def test_an_abstract_model_and_optimizer_through_nnx_jit_path():
    model = nnx.eval_shape(lambda: Net(nnx.Rngs(0)))
    optimizer = nnx.eval_shape(lambda: nnx.Optimizer(Net(nnx.Rngs(0)), optax.adam(1e-3), wrt=nnx.Param))
    x, y = jax.ShapeDtypeStruct((16, 32), F32), jax.ShapeDtypeStruct((16, 8), F32)
    before = live_bytes()
    plan = nnx_lab.memory(train_step, model, optimizer, x, y)
    expected = analysis(nnx.jit(train_step).lower(model, optimizer, x, y).compile())
    assert plan.analysis == expected and plan.analysis["temp"] > 0
    assert live_bytes() == before  # abstract in, nothing allocated
    names = [d.argument for d in plan.donations]
    assert any(n.startswith("optimizer") for n in names) and any(n.startswith("model") for n in names)
    assert "donate optimizer (argument 1)" in plan.to_text()


def test_real_arguments_are_unchanged_and_nothing_runs():
    model = Net(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    x, y = jnp.ones((16, 32)), jnp.ones((16, 8))
    state = jax.tree.map(host, nnx.state((model, optimizer)))
    count = int(model.drop.rngs.count[...]) if getattr(model.drop, "rngs", None) is not None else None
    plan = nnx_lab.memory(train_step, model, optimizer, x, y)
    assert plan.analysis is not None
    after = jax.tree.map(host, nnx.state((model, optimizer)))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(after)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert int(model.calls[...]) == 0
    if count is not None:
        assert int(model.drop.rngs.count[...]) == count


def test_a_donated_argument_is_not_suggested_and_the_other_is():
    def step(a, b):
        return a + b, b * 2

    spec = jax.ShapeDtypeStruct((100, 100), F32)
    plain = nnx_lab.memory(step, spec, spec)
    assert {d.argument for d in plain.donations} == {"a (argument 0)", "b (argument 1)"}
    donated = nnx_lab.memory(jax.jit(step, donate_argnums=0), spec, spec)
    assert donated.analysis["alias"] == 40_000
    assert [d.argument for d in donated.donations] == ["b (argument 1)"]


def test_a_module_as_the_step_plans_its_call():
    model = nnx.eval_shape(lambda: Net(nnx.Rngs(0)))
    plan = nnx_lab.memory(model, jax.ShapeDtypeStruct((4, 32), F32))
    assert plan.step_name == "Net" and plan.analysis["output"] >= 4 * 8 * 4


class NoAnalysis:
    """A step whose backend has no memory analysis (returns None, or -1 fields)."""

    def __init__(self, value):
        self.value = value

    def __call__(self, x):
        return x

    def lower(self, *args):
        value = self.value

        class Compiled:
            input_shardings = ()

            def memory_analysis(self):
                return value

        class Lowered:
            def compile(self):
                return Compiled()

        return Lowered()


def test_no_memory_analysis_is_said_in_one_line():
    plan = nnx_lab.memory(NoAnalysis(None), 1)
    assert plan.analysis is None and "has no memory analysis" in plan.to_text() and plan.fits is None

    class Minus:
        argument_size_in_bytes = output_size_in_bytes = alias_size_in_bytes = -1
        temp_size_in_bytes = generated_code_size_in_bytes = -1

    plan = nnx_lab.memory(NoAnalysis(Minus()), 1)
    assert plan.analysis is None and "returned -1" in plan.to_text()


def test_bad_input_is_one_line_and_allocates_nothing():
    gc.collect()
    before = live_bytes()
    with pytest.raises(TypeError, match=r"^nnx_lab.memory: the first argument must be a step .* got int"):
        nnx_lab.memory(3, jnp.zeros(()).shape)
    with pytest.raises(ValueError, match=r"^nnx_lab.memory: step could not be compiled with these arguments: ") as e:

        def step(a, b):
            return a @ b

        nnx_lab.memory(step, jax.ShapeDtypeStruct((3, 4), F32), jax.ShapeDtypeStruct((5, 6), F32))
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="could not be compiled"):
        nnx_lab.memory(lambda a: a, 1, 2)  # the step takes one argument
    seen = []

    @jax.jit
    def inside(x):
        try:
            nnx_lab.memory(lambda a: a * 2, x)
        except TypeError as e:
            seen.append(str(e))
        return x

    inside(jnp.ones(3))
    assert seen and "tracer" in seen[0] and "\n" not in seen[0]
    gc.collect()
    assert live_bytes() <= before + 12  # the one jnp.ones(3) above, freed; nothing else kept
