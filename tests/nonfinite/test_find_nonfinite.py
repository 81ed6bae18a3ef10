"""find_nonfinite (issue 37, first slice): seeded faults, each named by direction, module call and
primitive; the model and the caller's arguments bit-identical afterwards; one-line errors on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab.core.render import format_stat

from .models import AttnModel, MatmulModel, ScannedLayers, Stack, mse

X = jax.random.normal(jax.random.key(1), (16, 8))
Y = jnp.zeros((16, 1))


def call(model, x):
    return model(x)


@pytest.mark.parametrize("k", [1, 4])
def test_log_of_negative_activation_in_block_k(k):
    model = Stack(fault_at=k, fault="log")
    before = frozen(model)
    report = nnx_lab.find_nonfinite(mse, model, X, Y)
    assert (report.direction, report.module_path, report.module_class) == ("forward", f"blocks.{k}", "Block")
    assert (report.method, report.primitive) == ("__call__", "log")
    assert "models.py" in report.source and "Block.__call__" in report.source
    out = report.outputs[0]
    assert out["nan"] > 0 and out["first_bad"] is not None and out["min"] is not None
    assert report.inputs[0]["bad"] == 0
    text = str(report)
    assert f"forward pass first produced NaN/Inf in blocks.{k} (Block.__call__)" in text
    assert "primitive: log" in text
    assert_unchanged(model, before)


def _sqrt_model():
    model = Stack(fault_at=2, fault="sqrt")
    lin = model.blocks[2].linear
    lin.kernel[...] = lin.kernel[...].at[:, 0].set(0.0)  # a column of exact zeros: sqrt(h*h) at h == 0
    return model


def test_sqrt_at_zero_is_found_in_the_backward_only():
    model = _sqrt_model()
    assert bool(jnp.isfinite(mse(model, X, Y)))  # the forward is finite
    before = frozen(model)
    report = nnx_lab.find_nonfinite(mse, model, X, Y)
    assert (report.direction, report.module_path, report.primitive) == ("backward", "blocks.2", "sqrt")
    assert "models.py" in report.source
    assert report.outputs[0]["bad"] == 0 and report.inputs[0]["bad"] > 0
    assert "backward pass first produced NaN/Inf in the gradient of blocks.2" in str(report)
    assert_unchanged(model, before)


def test_all_masked_attention_row_is_a_forward_div():
    model = AttnModel()
    mask = jnp.ones((16, 16), bool).at[5].set(False)  # row 5 attends to nothing: 0 / 0
    before = frozen(model)
    report = nnx_lab.find_nonfinite(lambda m, x: m(x, mask), model, X)
    # the innermost call that made the NaN: the attention (its output projection only passes it on)
    assert (report.direction, report.module_path, report.module_class) == ("forward", "attn", "Attention")
    assert report.primitive == "div" and "models.py" in report.source
    assert report.outputs[0]["first_bad"] == (5, 0) and report.outputs[0]["nan"] == 8
    assert_unchanged(model, before)


def test_nan_in_the_batch_names_the_argument_leaf():
    model = Stack()
    before = frozen(model)
    batch = np.array(X)
    batch[3, 2] = np.nan
    kept = batch.copy()
    report = nnx_lab.find_nonfinite(mse, model, batch, Y)
    assert report.direction == "input" and report.bad_leaves == ["args[1]"]
    assert "already in fn's arguments" in str(report) and "args[1]" in str(report)
    assert np.array_equal(batch, kept, equal_nan=True)
    assert_unchanged(model, before)
    report = nnx_lab.find_nonfinite(mse, model, X, y=jnp.full((16, 1), jnp.inf))  # a keyword argument
    assert report.direction == "input" and report.bad_leaves == ["kwargs['y']"]


def scaled_mse(model, x, y, scale, *, weights=(1.0,)):
    return mse(model, x, y) * scale * weights[0]


@pytest.mark.parametrize(
    "args,kwargs,named",
    [
        ((float("inf"),), {}, ["args[3]"]),  # a Python float: nnx.split keeps it static
        ((np.float32("nan"),), {}, ["args[3]"]),  # a numpy scalar: static too
        ((np.array(np.inf),), {}, ["args[3]"]),  # a 0-d numpy array
        ((2.0,), {"weights": (float("nan"),)}, ["kwargs['weights'][0]"]),
        ((float("inf"),), {"weights": (np.float64("-inf"),)}, ["args[3]", "kwargs['weights'][0]"]),
    ],
)
def test_a_nonfinite_python_or_numpy_scalar_argument_is_in_the_input(args, kwargs, named):
    model = Stack()
    before = frozen(model)
    report = nnx_lab.find_nonfinite(scaled_mse, model, X, Y, *args, **kwargs)
    assert report.direction == "input" and report.bad_leaves == named, str(report)
    assert "already in fn's arguments" in str(report) and named[0] in str(report)
    assert_unchanged(model, before)


def _finite_text(a: np.ndarray) -> str:
    finite = a[np.isfinite(a)]
    mean = finite.astype(np.float64).mean()
    return f"min {format_stat(finite.min())}  max {format_stat(finite.max())}  mean {format_stat(mean)}"


def test_an_input_verdict_describes_each_bad_leaf_from_numbers_reduced_on_device():
    """An Inf in a kernel and NaN in the batch: per bad argument leaf, its NaN, +Inf and -Inf counts of
    its size, its shape and dtype, the first bad index and its finite values' min/max/mean, all checked
    against numpy; only those numbers leave the device (jax's transfer guard refuses any implicit copy)."""
    model = Stack()
    kernel = np.array(model.blocks[2].linear.kernel[...])
    kernel[1, 2], kernel[0, 5], kernel[3, 1] = np.inf, -np.inf, np.nan
    model.blocks[2].linear.kernel[...] = jnp.asarray(kernel)
    batch = np.array(X)
    batch[3, 2] = batch[7, 0] = np.nan
    before = frozen(model)
    with jax.transfer_guard_device_to_host("disallow"):
        report = nnx_lab.find_nonfinite(mse, model, jnp.asarray(batch), Y)
    assert report.direction == "input"
    k, b = report.inputs
    assert (k["nan"], k["posinf"], k["neginf"]) == (
        np.isnan(kernel).sum(),
        np.isposinf(kernel).sum(),
        np.isneginf(kernel).sum(),
    )
    assert k["first_bad"] == tuple(int(i) for i in np.argwhere(~np.isfinite(kernel))[0]) == (0, 5)
    assert (b["nan"], b["inf"], b["first_bad"]) == (np.isnan(batch).sum(), 0, (3, 2))
    assert str(report).splitlines() == [
        "find_nonfinite: the NaN/Inf values were already in fn's arguments:",
        f"  args[0].blocks[2].linear.kernel: 1 NaN, 1 +Inf, 1 -Inf of {kernel.size} in {kernel.shape} float32, "
        f"first bad at (0, 5); finite values {_finite_text(kernel)}",
        f"  args[1]: 2 NaN of {batch.size} in {batch.shape} float32, first bad at (3, 2); "
        f"finite values {_finite_text(batch)}",
    ]
    assert_unchanged(model, before)


def test_an_input_of_inf_only_scalars_keys_and_integers():
    """A leaf with no finite value, a Python float and a 0-d array are described; a PRNG key (new and
    old style) and an integer array beside them are not bad and break nothing."""
    model = Stack()
    infs = jnp.ones((1, 3000), jnp.bfloat16).at[0, 1234:].set(-jnp.inf).at[0, :1234].set(jnp.inf)

    def loss(m, x, y, key, old_key, ids, w, s):
        return mse(m, x, y)

    with jax.transfer_guard_device_to_host("disallow"):
        report = nnx_lab.find_nonfinite(
            loss, model, X, Y, jax.random.key(0), jax.random.PRNGKey(1), jnp.arange(7), infs, float("nan")
        )
    assert report.bad_leaves == ["args[6]", "args[7]"]
    assert str(report).splitlines()[1:] == [
        "  args[6]: 1,234 +Inf, 1,766 -Inf of 3,000 in (1, 3000) bfloat16, first bad at (0, 0); no finite value",
        "  args[7]: NaN, a float64 scalar",
    ]


def test_past_twenty_bad_leaves_the_rest_are_counted_and_the_first_named():
    model = Stack()
    xs = [jnp.full((2,), jnp.nan)] * 23
    report = nnx_lab.find_nonfinite(lambda m, *xs: mse(m, X, Y), model, *xs)
    assert len(report.inputs) == 20 and len(report.bad_leaves) == 23
    assert str(report).splitlines()[-1] == "  and 3 more: args[21], args[22], args[23]"
    report = nnx_lab.find_nonfinite(lambda m, *xs: mse(m, X, Y), model, *[jnp.full((2,), jnp.inf)] * 1500)
    last = str(report).splitlines()[-1]
    assert last == "  and 1,480 more, the first 20: " + ", ".join(f"args[{i}]" for i in range(21, 41))
    assert len(str(report).splitlines()) == 22  # the verdict, 20 leaves, the rest in one line


SHARDED = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import nnx_lab
    from nonfinite.models import Stack, mse

    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model"))
    x = np.array(jax.random.normal(jax.random.key(1), (16, 8)))
    x[9, 5], x[12, 0], x[13, 7] = np.nan, np.inf, np.nan
    sharded = jax.device_put(jnp.asarray(x), NamedSharding(mesh, P("data", "model")))
    with jax.transfer_guard_device_to_host("disallow"):
        report = nnx_lab.find_nonfinite(mse, Stack(), sharded, jnp.zeros((16, 1)))
    s = report.inputs[0]
    print(json.dumps({"devices": len(sharded.sharding.device_set), "text": str(report).splitlines()[1],
                      "stats": [s["nan"], s["posinf"], s["neginf"], list(s["first_bad"])]}))
""")


def test_a_sharded_batch_is_described_where_it_lives():
    """The batch sharded over 4 devices (2 x 2): reduced there, its counts and first bad index as numpy says."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == 4
    assert out["stats"] == [2, 1, 0, [9, 5]]
    assert out["text"].startswith("  args[1]: 2 NaN, 1 +Inf of 128 in (16, 8) float32, first bad at (9, 5); ")


def test_a_module_attribute_that_is_inf_is_not_an_input():
    model = Stack(fault_at=1, fault="log")
    model.clip = float("inf")  # a static attribute of the model: part of it, not of the call
    report = nnx_lab.find_nonfinite(mse, model, X, Y)
    assert (report.direction, report.module_path) == ("forward", "blocks.1")


def test_a_bad_variable_is_an_input_leaf():
    model = Stack()
    model.blocks[3].linear.bias[...] = model.blocks[3].linear.bias[...].at[0].set(jnp.inf)
    report = nnx_lab.find_nonfinite(mse, model, X, Y)
    assert report.direction == "input"
    assert report.bad_leaves == ["args[0].blocks[3].linear.bias"]


@pytest.mark.parametrize("dtype,value", [(jnp.float16, 30000.0), (jnp.bfloat16, 1e38)])
def test_low_precision_matmul_overflow(dtype, value):
    model = MatmulModel(dtype)
    model.big.kernel[...] = jnp.full((4, 4), value, dtype)
    before = frozen(model)
    report = nnx_lab.find_nonfinite(call, model, jnp.ones((2, 4)))
    assert (report.direction, report.module_path, report.module_class) == ("forward", "big", "Linear")
    assert report.primitive == "dot_general"
    assert report.outputs[0]["inf"] == 8 and report.outputs[0]["dtype"] == jnp.dtype(dtype).name
    assert_unchanged(model, before)


def test_scan_stacked_layers_name_the_layer_index():
    model = ScannedLayers(bad=2)
    before = frozen(model)
    report = nnx_lab.find_nonfinite(call, model, jnp.ones((3, 4)))
    assert (report.direction, report.module_path, report.module_class) == ("forward", "layers", "LogLayer")
    assert report.occurrence == 2 and report.primitive == "log"
    assert "call #2" in str(report) and "layer index" in str(report)
    assert_unchanged(model, before)


class HalfNorm(nnx.Module):
    """Small activations through a BatchNorm (epsilon 1e-8) whose statistics were taken in float32."""

    def __init__(self):
        rngs = nnx.Rngs(0)
        self.pre = nnx.Linear(8, 8, rngs=rngs)
        self.norm = nnx.BatchNorm(8, momentum=0.0, epsilon=1e-8, rngs=rngs)
        self.head = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(self.norm(self.pre(x) * 1e-4))


def test_batchnorm_variance_underflowing_in_float16_names_the_norm_and_rsqrt():
    model = HalfNorm()
    model(X)  # training-mode call: running variance ~1e-8 (float32)
    model.eval()
    # The whole model cast to float16, as for half-precision inference: the running variance
    # (~1e-8) and epsilon (1e-8) both round to 0 there, so rsqrt(var + epsilon) is Inf.
    nnx.update(model, jax.tree.map(lambda a: a.astype(jnp.float16), nnx.state(model)))
    assert not bool(jnp.any(model.norm.var[...]))
    x = X.astype(jnp.float16)
    before = frozen(model)
    report = nnx_lab.find_nonfinite(call, model, x)
    assert (report.direction, report.module_path, report.module_class) == ("forward", "norm", "BatchNorm")
    assert report.primitive == "rsqrt" and "normalization.py" in report.source
    assert report.inputs[0]["bad"] == 0 and report.outputs[0]["bad"] == 16 * 8
    assert "first produced NaN/Inf in norm (BatchNorm.__call__)" in str(report)
    assert_unchanged(model, before)


class Noisy(nnx.Module):
    """BatchNorm statistics and Dropout RNG counts: state a call changes."""

    def __init__(self):
        rngs = nnx.Rngs(0, dropout=1)
        self.linear = nnx.Linear(8, 8, rngs=rngs)
        self.norm = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.head = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(jnp.log(self.drop(self.norm(self.linear(x))) + 0.5))


def test_stateful_model_is_bit_identical_and_searched_with_its_own_state():
    model = Noisy()
    before = frozen(model)
    report = nnx_lab.find_nonfinite(mse, model, X, Y)
    assert (report.direction, report.module_path, report.primitive) == ("forward", "", "log")
    assert "(root) (Noisy.__call__)" in str(report)
    assert_unchanged(model, before)


def test_everything_finite_says_so():
    model = Stack()
    before = frozen(model)
    report = nnx_lab.find_nonfinite(mse, model, X, Y)
    assert report.direction is None and report.module_path is None
    assert str(report).startswith("find_nonfinite: everything finite (14 module calls)")
    assert report.to_dict()["direction"] is None
    shown = report.payload()  # the widget: the verdict, and what was checked under it once
    assert shown["verdict"] == "everything finite (14 module calls)." and report.note and shown["note"] == report.note
    assert_unchanged(model, before)


def test_jitted_fn_is_unwrapped():
    model = Stack(fault_at=1, fault="log")
    for jitted in (jax.jit(mse), nnx.jit(mse)):
        report = nnx_lab.find_nonfinite(jitted, model, X, Y)
        assert (report.direction, report.module_path, report.primitive) == ("forward", "blocks.1", "log")


class _Compiled:
    """Looks jitted (it can be lowered) but hides its Python function."""

    def __call__(self, *a):
        return 0.0

    def lower(self, *a):
        raise NotImplementedError


@pytest.mark.parametrize(
    "fn,args,error,words",
    [
        (3, (), TypeError, "fn must be callable"),
        (lambda x: x.sum(), (X,), TypeError, "no nnx.Module in fn's arguments"),
        (_Compiled(), (Stack(),), TypeError, "pass the function you gave jax.jit / nnx.jit"),
        (call, (Stack(), X), ValueError, "not a scalar loss"),
    ],
)
def test_bad_input_one_line_nothing_changed(fn, args, error, words):
    models = [a for a in args if isinstance(a, nnx.Module)]
    before = [frozen(m) for m in models]
    with pytest.raises(error) as info:
        nnx_lab.find_nonfinite(fn, *args)
    assert words in str(info.value) and "\n" not in str(info.value)
    for m, b in zip(models, before):
        assert_unchanged(m, b)


def test_report_html_escapes_user_strings():
    model = Stack()
    report = nnx_lab.find_nonfinite(mse, model, {"<b>x</b>": X.at[0, 0].set(jnp.nan)}["<b>x</b>"], Y)
    assert report.direction == "input"
    report.bad_leaves = ["args[1]['<b>x</b>']"]
    html = report._repr_html_()
    assert "<b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_to_dict_is_plain_data():
    report = nnx_lab.find_nonfinite(mse, Stack(fault_at=0, fault="log"), X, Y)
    d = report.to_dict()
    assert d["direction"] == "forward" and d["module_path"] == "blocks.0" and d["primitive"] == "log"
    assert d["primitive_chain"][-1] == "log" and d["outputs"][0]["nan"] > 0


def test_a_fault_in_fns_own_code_is_said_to_be_outside_any_module_call():
    model = nnx.Linear(4, 1, rngs=nnx.Rngs(0))

    def loss_and_aux(m, x):  # sqrt at 0 in the loss itself; (loss, aux) as jax.value_and_grad's has_aux takes it
        return jnp.sqrt(m(x) * 0).sum(), {"aux": 1}

    report = nnx_lab.find_nonfinite(loss_and_aux, model, jnp.ones((3, 4)))
    assert report.direction == "backward" and report.module_path is None
    assert "backward pass first produced NaN/Inf in fn's own code, outside any module call" in str(report)
    assert sorted(report.bad_variables) == ["bias", "kernel"]


def test_an_error_in_fn_propagates_and_restores_every_method():
    from .models import Block

    model = Stack(fault_at=1, fault="log")
    before, methods = frozen(model), (Block.__call__, nnx.Linear.__call__)

    def broken(m, x):
        m(x)
        raise KeyError("the user's own bug")

    with pytest.raises(KeyError, match="the user's own bug"):
        nnx_lab.find_nonfinite(broken, model, X)
    assert (Block.__call__, nnx.Linear.__call__) == methods
    assert_unchanged(model, before)
    # and the next search works (the patch lock was released)
    assert nnx_lab.find_nonfinite(mse, model, X, Y).module_path == "blocks.1"


@pytest.mark.parametrize("zero", [1, 3])
def test_scan_stacked_backward_fault_names_the_layer(zero):
    from .models import ScannedSqrt

    model = ScannedSqrt(zero)
    before = frozen(model)
    report = nnx_lab.find_nonfinite(lambda m, x: jnp.sum(m(x) ** 2), model, jnp.ones((3, 4)))
    assert (report.direction, report.module_path, report.module_class) == ("backward", "layers", "SqrtLayer")
    assert report.occurrence == zero and report.primitive == "sqrt"
    assert report.bad_variables == ["shift"]
    assert_unchanged(model, before)


@pytest.mark.parametrize("shape,piece", [((5, 9), 7), ((41,), 7), ((3, 4, 5), 7), ((2, 3, 50), 64)])
def test_a_leaf_too_large_for_int32_counts_is_described_piece_by_piece(monkeypatch, shape, piece):
    """Past 2**31 - 1 elements int32 counts and flat indices overflow: such a leaf is reduced in pieces
    along its leading axes and the pieces' numbers added up (here the limit made small), as numpy says."""
    from nnx_lab.core.nonfinite import _report

    a = np.array(jax.random.normal(jax.random.key(3), shape))
    flat = a.reshape(-1)
    where = np.random.default_rng(0).choice(flat.size, 9, replace=False)
    flat[where[:4]], flat[where[4:7]], flat[where[7:]] = np.nan, np.inf, -np.inf
    monkeypatch.setattr(_report, "PIECE", piece)
    with jax.transfer_guard_device_to_host("disallow"):
        s = _report.leaf_stats("x", jnp.asarray(a))
    finite = a[np.isfinite(a)].astype(np.float64)
    assert (s["nan"], s["posinf"], s["neginf"], s["bad"]) == (4, 3, 2, 9)
    assert s["first_bad"] == tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
    assert (s["min"], s["max"]) == (finite.min(), finite.max())
    assert s["mean"] == pytest.approx(finite.mean(), rel=1e-5, abs=1e-6)
