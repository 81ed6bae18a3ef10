"""A viewer's program reads each float array once, from the previous refresh's shift and exponent
(core/snapshot/_one_pass.py): exact whenever the host's check passes, and the exact kernel's numbers
whenever it fails (a magnitude jump, a shift far from the new mean, NaN appearing)."""

import re
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_lab.core import compat
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.stats import _dispatch as dispatch_lib
from nnx_lab.core.stats import _kernels as kernels
from nnx_lab.core.stats import _programs as programs
from nnx_lab.core.watcher import Watcher

RNG = np.random.default_rng(11)


class Model(nnx.Module):
    """One array alone in the program, four of one spec stacked, a bfloat16 one and an integer one."""

    def __init__(self):
        self.w = nnx.Param(jnp.asarray(RNG.normal(0, 1, (300, 301)).astype(np.float32)))
        for k in range(4):
            setattr(self, f"v{k}", nnx.Param(jnp.asarray(RNG.normal(k, 0.5, (37,)).astype(np.float32))))
        self.h = nnx.Param(jnp.asarray(RNG.normal(0, 2, (64, 33)), jnp.bfloat16))
        self.steps = nnx.Variable(jnp.asarray(RNG.integers(0, 99, (5,)), jnp.int32))


def numpy_stats(x) -> dict:
    x = np.asarray(x).astype(np.float64)
    f = x[np.isfinite(x)]
    return {
        "mean": f.mean(),
        "std": f.std(),
        "min": f.min(),
        "max": f.max(),
        "norm": np.sqrt((f**2).sum()),
        "abs_max": np.abs(f).max(),
        "nan_count": int(np.isnan(x).sum()),
        "inf_count": int(np.isinf(x).sum()),
        "zero_frac": float((x == 0).mean()),
    }


def assert_numpy(snap, name, value, rel=2e-5):
    got, want = snap[name].stats, numpy_stats(value)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=rel, abs=1e-6 * max(1.0, abs(v))), (name, k, got[k], v)


@pytest.fixture
def kernel_calls(monkeypatch):
    """The per-array kernels called (a one-pass refresh calls none)."""
    called = []
    real = dispatch_lib.call
    monkeypatch.setattr(dispatch_lib, "call", lambda k, x: called.append(k) or real(k, x))
    return called


def with_program(model):
    """``model`` refreshed once by a viewer (per-array exact kernels: the first guesses), its program compiled."""
    Watcher(model, max_rate=100.0).refresh(force=True)
    arrays = [x for x in jax.tree.leaves(nnx.state(model)) if x.size]
    ks = [kernels.kernel_and_names(x.dtype)[0] for x in arrays]
    deadline = time.monotonic() + 120
    while not isinstance(programs.program_for(ks, arrays, background=True, eager=True), programs.Program):
        assert time.monotonic() < deadline, "the program was not compiled"
        time.sleep(0.05)
    return model


def refresh(model):
    return PendingSnapshot(model, repeated=True).finish()


def set_value(variable, value):
    compat.set_value(variable, jnp.asarray(value, compat.get_value(variable).dtype))


def test_a_warm_refresh_runs_no_per_array_kernel_and_equals_numpy(kernel_calls):
    model = with_program(Model())
    set_value(model.w, np.asarray(compat.get_value(model.w)) * 1.01 + 0.003)  # a training step's change
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == []
    for name in ("w", "v0", "v3", "h"):
        assert_numpy(snap, name, compat.get_value(getattr(model, name)).astype(np.float32))
    assert snap["steps"].stats["max"] == int(np.asarray(compat.get_value(model.steps)).max())


@pytest.mark.parametrize("factor", [2.0**40, 2.0**-40])
def test_a_magnitude_jump_is_described_by_the_exact_kernel_then_guessed_again(kernel_calls, factor):
    model = with_program(Model())
    set_value(model.w, np.asarray(compat.get_value(model.w)) * factor)
    set_value(model.v2, np.asarray(compat.get_value(model.v2)) * factor)  # one of a stacked batch
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == [kernels.float_kernel] * 2  # those two only, exactly
    for name in ("w", "v2", "v1"):
        assert_numpy(snap, name, compat.get_value(getattr(model, name)))
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == []  # the exact kernel's numbers were the next guess
    assert_numpy(snap, "w", compat.get_value(model.w))


def test_a_shift_far_from_the_new_mean_is_not_trusted(kernel_calls):
    model = with_program(Model())
    w = np.asarray(compat.get_value(model.w)).astype(np.float64)
    offset = (w * 1e-2 + 1000.0).astype(np.float32)  # |mean - shift| is 1e5 standard deviations
    set_value(model.w, offset)
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == [kernels.float_kernel]  # the one pass would have lost the std to cancellation
    assert_numpy(snap, "w", offset)  # the std to 2e-5, as test_stats.py's offset_small_std


def test_nan_appearing_is_counted_by_the_masked_kernel(kernel_calls):
    model = with_program(Model())
    w = np.asarray(compat.get_value(model.w)).copy()
    w[3, 4], w[7, 8], w[9, 9] = np.nan, np.inf, np.nan
    set_value(model.w, w)
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == [kernels.float_masked]
    assert_numpy(snap, "w", w)
    assert (snap["w"].stats["nan_count"], snap["w"].stats["inf_count"]) == (2, 1)


MAGNITUDES = {
    "float32": (np.float32, [4e-21, 1e-37, 1e30, 1e38]),
    "bfloat16": (jnp.bfloat16, [4e-21, 1e-37, 1e30, 1e38]),
    "float16": (np.float16, [2e-4, 1.0, 3e4]),
}


@pytest.mark.parametrize("dtype", MAGNITUDES)
def test_the_one_pass_is_exact_near_both_ends_of_each_float_range(kernel_calls, dtype):
    kind, scales = MAGNITUDES[dtype]

    class Two(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.ones((777,), kind))
            self.b = nnx.Param(jnp.ones((777,), kind))

    model = with_program(Two())
    base = RNG.choice([-1.0, 1.0], 777) * RNG.uniform(0.5, 2.0, 777)
    for scale in scales:
        plain = np.asarray(jnp.asarray(base * scale, kind))
        offset = np.asarray(jnp.asarray(scale * (1.5 + 1e-2 * base), kind))  # |mean| >> std
        set_value(model.a, plain)
        set_value(model.b, offset)
        refresh(model)  # the jump to this magnitude: the exact kernel, then the guess
        set_value(model.a, plain[::-1].copy())  # other values, the same statistics
        set_value(model.b, offset[::-1].copy())
        kernel_calls.clear()
        snap = refresh(model)
        assert kernel_calls == [], (dtype, scale)  # the one pass was trusted ...
        assert_numpy(snap, "a", plain)  # ... and exact
        assert snap["b"].stats["std"] == pytest.approx(offset.astype(np.float64).std(), rel=1e-3)
        assert snap["b"].stats["norm"] == pytest.approx(np.sqrt((offset.astype(np.float64) ** 2).sum()), rel=2e-5)


def test_one_reduction_reads_the_array():
    """The lowered kernel (what every backend compiles) reads the array in ONE multi-output reduce
    (min, max, Σy, Σy², zero count) and then reduces its row partials; XLA's CPU backend, with the
    program's options, compiles it to those two reductions and materializes no scaled copy."""
    x = jnp.ones((512, 2048))
    lowered = jax.jit(kernels.float_one_pass).lower(x, jnp.float32(0), jnp.int32(0))
    reduces = [line for line in lowered.as_text().splitlines() if "stablehlo.reduce" in line]
    over_data = [line for line in reduces if "tensor<512x2048xf32>" in line.split(" : ")[-1]]
    assert len(reduces) == 2 and len(over_data) == 1
    assert re.search(r"= stablehlo\.reduce", over_data[0]) and ":5 = " in over_data[0]  # five results
    compiled = lowered.compile(compiler_options=programs.COMPILER_OPTIONS[0]).as_text()
    assert len(re.findall(r"\breduce\(", compiled)) == 2
    entry = compiled[compiled.index("ENTRY") :]
    assert len(re.findall(r"= f32\[512,2048\]", entry)) == 1  # the parameter alone: no copy of the data


X64_SCRIPT = """
import json, jax, jax.numpy as jnp, numpy as np
from flax import nnx
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.watcher import Watcher
from nnx_lab.core.stats import _dispatch as dispatch_lib
called = []
real = dispatch_lib.call
dispatch_lib.call = lambda k, x: called.append(k) or real(k, x)
rng = np.random.default_rng(0)
class M(nnx.Module):
    def __init__(self):
        self.tiny = nnx.Param(jnp.asarray(rng.normal(size=(333,)) * 1e-300))
        self.huge = nnx.Param(jnp.asarray(rng.normal(size=(200, 7)) * 1e300))
m = M()
Watcher(m, max_rate=100.0).refresh(force=True)  # x64: the program compiles on this thread
called.clear()
snap = PendingSnapshot(m, repeated=True).finish()
out = [len(called)]
for name, scale in (("tiny", 1e-300), ("huge", 1e300)):
    f = np.asarray(getattr(m, name)[...]) / scale  # numpy's own sums underflow/overflow: scaled reference
    s = snap[name].stats
    out += [s["std"] / (f.std() * scale), s["norm"] / (np.sqrt((f ** 2).sum()) * scale), s["mean"] / (f.mean() * scale)]
print(json.dumps(out))
"""


def test_float64_with_x64_on_is_read_once_and_exact():
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", X64_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    calls, *ratios = json.loads(proc.stdout.strip().splitlines()[-1])
    assert calls == 0  # the program's one pass, trusted
    assert all(abs(r - 1) < 1e-12 for r in ratios[:2] + ratios[3:5]), ratios  # std and norm
    assert abs(ratios[2] - 1) < 1e-9 and abs(ratios[5] - 1) < 1e-9, ratios  # mean


SHARDED_SCRIPT = """
import json, time, jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from flax import nnx
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.watcher import Watcher
from nnx_lab.core.stats import _programs as programs
s = NamedSharding(jax.make_mesh((4,), ("d",)), P("d"))
class M(nnx.Module):
    def __init__(self):
        self.a = nnx.Param(jax.device_put(jnp.arange(64.0).reshape(16, 4), s))
        self.b = nnx.Param(jax.device_put(jnp.ones((8, 3)), s))
        self.c = nnx.Param(jnp.ones((5,)))
        self.d = nnx.Param(jnp.arange(7.0))
m = M()
Watcher(m, max_rate=100.0).refresh(force=True)
deadline = time.monotonic() + 120
while programs.compiling() and time.monotonic() < deadline:
    time.sleep(0.05)
kinds = sorted(type(v).__name__ if not isinstance(v, str) else v for v in programs._programs.values())
snap = PendingSnapshot(m, repeated=True).finish()
print(json.dumps([kinds, snap["a"].stats["mean"], snap["d"].stats["std"]]))
"""


def test_a_program_of_sharded_arrays_beside_one_of_single_device_arrays_compiles():
    """Sharded arrays are reduced shard by shard (core/stats/_shards.py): their shards, side by
    side over the 4 devices, make one program (exact kernels, no collective); the single-device
    arrays' program, beside it, reads them in one pass. Both compile and agree with numpy."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SHARDED_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    kinds, mean, std = json.loads(proc.stdout.strip().splitlines()[-1])
    assert kinds == ["Program", "Program"]
    assert mean == 31.5 and std == pytest.approx(np.arange(7.0).std(), rel=1e-6)


def test_a_scalar_or_filled_array_changing_every_step_needs_no_second_round(kernel_calls):
    """min == max says everything (mean = min, std = 0) whatever the guess: a float scalar (a learning
    rate) or a filled array changing at every step would otherwise fail the check at every refresh."""

    class Filled(nnx.Module):
        def __init__(self):
            self.lr = nnx.Param(jnp.asarray(0.1, jnp.float32))
            self.fill = nnx.Param(jnp.zeros((40,), jnp.float32))

    model = with_program(Filled())
    for value in (3.0, 199.0, -(2.0**-100), 1e4):  # (a jump whose sums overflow: the masked kernel)
        set_value(model.lr, np.float32(value / 7))
        set_value(model.fill, np.full((40,), value, np.float32))
        kernel_calls.clear()
        snap = refresh(model)
        assert kernel_calls == [], value
        assert_numpy(snap, "lr", np.float32(value / 7).reshape(1))
        assert_numpy(snap, "fill", np.full((40,), value, np.float32))
        assert snap["fill"].stats["std"] == 0.0
        assert snap["fill"].stats["mean"] == float(np.float32(value))  # exactly, however tiny
        assert snap["lr"].stats["mean"] == float(np.float32(value / 7))
