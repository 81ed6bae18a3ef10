"""Statistics are computed on device, agree with numpy, and compile once per distinct spec."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.stats import compiling, compute_stats, kernel_cache_size


def numpy_stats(x: np.ndarray) -> dict:
    x = x.astype(np.float64)
    finite = x[np.isfinite(x)]
    return {
        "mean": finite.mean(),
        "std": finite.std(),
        "min": finite.min(),
        "max": finite.max(),
        "norm": np.sqrt((finite**2).sum()),
        "abs_max": np.abs(finite).max(),
        "nan_count": int(np.isnan(x).sum()),
        "inf_count": int(np.isinf(x).sum()),
        "zero_frac": float((x == 0).mean()),
    }


def assert_close(got: dict, want: dict, rtol=2e-5, atol=1e-6):
    assert set(got) == set(want)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=rtol, abs=atol), k


RNG = np.random.default_rng(0)
CASES = {
    "normal": RNG.normal(0, 1, (64, 33)).astype(np.float32),
    "offset_small_std": RNG.normal(1000, 0.01, (4096,)).astype(np.float32),  # |mean| >> std
    "ones": np.ones((128,), np.float32),  # BatchNorm running variance
    "with_zeros": np.where(RNG.random((50, 50)) < 0.3, 0, RNG.normal(size=(50, 50))).astype(np.float32),
    "nan_inf": np.array([1.0, np.nan, -2.0, np.inf, 0.0, -np.inf, np.nan, 3.5], np.float32),
    "big": RNG.normal(0, 1, (512, 2048)).astype(np.float32),
}


@pytest.mark.parametrize("name", CASES)
def test_float_stats_match_numpy(name):
    x = CASES[name]
    [got] = compute_stats([jnp.asarray(x)])
    assert_close(got, numpy_stats(x))


def test_bfloat16_upcast_and_all_nonfinite():
    x = RNG.normal(size=(300,)).astype(np.float32)
    [got] = compute_stats([jnp.asarray(x, jnp.bfloat16)])
    assert_close(got, numpy_stats(np.asarray(jnp.asarray(x, jnp.bfloat16)).astype(np.float32)))
    [nothing] = compute_stats([jnp.array([np.nan, np.inf, np.nan])])
    assert nothing["mean"] is None and nothing["max"] is None
    assert (nothing["nan_count"], nothing["inf_count"]) == (2, 1)


def test_integer_bool_complex_subsets():
    i = RNG.integers(-50, 50, (1000,)).astype(np.int32)
    b = RNG.random(777) < 0.25
    c = (RNG.normal(size=64) + 1j * RNG.normal(size=64)).astype(np.complex64)
    gi, gb, gc = compute_stats([jnp.asarray(i), jnp.asarray(b), jnp.asarray(c)])
    assert_close(gi, {k: v for k, v in numpy_stats(i).items() if k in ("mean", "std", "min", "max", "zero_frac")})
    assert_close(gb, {"mean": b.mean(), "zero_frac": 1 - b.mean()})
    assert_close(
        gc,
        {
            k: v
            for k, v in numpy_stats(np.abs(c)).items()
            if k in ("norm", "abs_max", "nan_count", "inf_count", "zero_frac")
        },
    )


def test_no_implicit_device_to_host_transfer(net):
    compat.set_value(net.blocks[0].linear.kernel, compat.get_value(net.blocks[0].linear.kernel).at[0, 0].set(jnp.nan))
    with jax.transfer_guard_device_to_host("disallow"):
        snap = nnx_lab.snapshot(net)
        snap.to_dict()
        repr(snap)
        snap._repr_html_()
    assert snap["blocks[0].linear.kernel"].stats["nan_count"] == 1


def test_one_host_fetch_per_snapshot(net, monkeypatch):
    calls = []
    real = jax.device_get
    monkeypatch.setattr(jax, "device_get", lambda x: calls.append(x) or real(x))
    snap = nnx_lab.snapshot(net)
    assert len(calls) == 1
    fetched = jax.tree.leaves(calls[0])
    numeric_rows = [r for r in snap.rows if r.stats]
    # O(#variables) numbers, no array data: ten per array (twelve for an integer one).
    assert sum(a.size for a in fetched) <= 12 * len(numeric_rows)


@pytest.mark.needs_flax("nnx.List")
def test_compiles_once_per_distinct_spec_and_reuses():
    # 12 arrays, 3 distinct (shape, dtype): compile count must follow specs, not arrays.
    class M(nnx.Module):
        def __init__(self):
            self.ws = nnx.List([nnx.Param(jnp.full((17, 3), float(i))) for i in range(6)])
            self.bs = nnx.List([nnx.Param(jnp.full((19,), float(i))) for i in range(4)])
            self.cs = nnx.List([nnx.Param(jnp.full((23,), i, jnp.int32)) for i in range(2)])

    deadline = time.monotonic() + 120
    while compiling() and time.monotonic() < deadline:  # an earlier test's program, compiling
        time.sleep(0.05)
    before = kernel_cache_size()
    nnx_lab.snapshot(M())
    after_first = kernel_cache_size()
    assert after_first - before == 3
    m = M()
    for _ in range(3):
        nnx_lab.snapshot(m)
    assert kernel_cache_size() == after_first


# Near both ends of each float type's range (numpy in float64 is the reference). Before the scaled
# sums, Adam's nu near 4e-21 read `std 0.0, norm 0.0` and values near 1e30 `std inf, norm inf`.
MAGNITUDES = {
    "float32": (np.float32, [4e-21, 1e-37, 1e30, 1e38]),
    "bfloat16": (jnp.bfloat16, [4e-21, 1e-37, 1e30, 1e38]),
    "float16": (np.float16, [2e-4, 1.0, 3e4]),
}


@pytest.mark.parametrize("dtype", MAGNITUDES)
def test_norm_and_std_are_exact_at_every_magnitude(dtype):
    kind, scales = MAGNITUDES[dtype]
    base = RNG.choice([-1.0, 1.0], 777) * RNG.uniform(0.5, 2.0, 777)  # every value a normal number
    for scale in scales:
        x = np.asarray(jnp.asarray(base * scale, kind))  # the values as the dtype holds them
        assert np.isfinite(x.astype(np.float64)).all() and (x != 0).all()
        [got] = compute_stats([jnp.asarray(x)])
        want = numpy_stats(x)
        for k in ("mean", "std", "norm", "min", "max", "abs_max"):
            assert got[k] == pytest.approx(want[k], rel=2e-5), (dtype, scale, k, got[k], want[k])
        # Offset values (|mean| >> std) at the same magnitudes: no cancellation.
        y = np.asarray(jnp.asarray(scale * (1.5 + 1e-2 * base), kind))
        [got] = compute_stats([jnp.asarray(y)])
        want = numpy_stats(y)
        assert got["std"] == pytest.approx(want["std"], rel=1e-3), (dtype, scale)
        assert got["norm"] == pytest.approx(want["norm"], rel=2e-5), (dtype, scale)


def test_nan_and_inf_beside_huge_and_tiny_values():
    x = np.array([3e38, -3e38, np.nan, np.inf, 1e-30, 0.0], np.float32)
    [got] = compute_stats([jnp.asarray(x)])
    want = numpy_stats(x)
    assert got["mean"] == pytest.approx(want["mean"], abs=1e-7 * 3e38)  # float32 rounding of a sum of +-3e38
    assert_close(
        {k: v for k, v in got.items() if k != "mean"}, {k: v for k, v in want.items() if k != "mean"}, rtol=1e-6, atol=0
    )
    assert got["norm"] == pytest.approx(np.sqrt(2) * 3e38, rel=1e-6)  # beyond float32's range: exact


def test_integers_beyond_2_to_the_24_keep_exact_extremes():
    x = np.array([2**24 + 1, 2**31 - 1, -(2**31), 7], np.int32)
    [got] = compute_stats([jnp.asarray(x)])
    assert (got["min"], got["max"]) == (-(2**31), 2**31 - 1)
    assert isinstance(got["max"], int)
    assert got["mean"] == pytest.approx(x.astype(np.float64).mean(), rel=1e-6)
    u = np.array([0, 2**32 - 1, 2**25 + 3], np.uint32)
    [got] = compute_stats([jnp.asarray(u)])
    assert (got["min"], got["max"]) == (0, 2**32 - 1)


X64_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, json
from nnx_lab.core.stats import compute_stats
rng = np.random.default_rng(0)
out = []
for scale in (1e-300, 1e-200, 1e200, 1e300):
    x = rng.normal(size=(333,)) * scale
    [got] = compute_stats([jnp.asarray(x)])
    f = x / scale  # numpy's own std and norm underflow and overflow here: the reference is scaled
    out.append([got["std"] / (f.std() * scale), got["norm"] / (np.sqrt((f ** 2).sum()) * scale),
                got["mean"] / (f.mean() * scale), str(jnp.asarray(x).dtype)])
big = np.array([2**53 + 1, -(2**62), 5], np.int64)
[g] = compute_stats([jnp.asarray(big)])
out.append([g["min"], g["max"]])
print(json.dumps(out))
"""


def test_float64_and_int64_with_x64_on():
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", X64_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    *ratios, ints = json.loads(proc.stdout.strip().splitlines()[-1])
    for std_ratio, norm_ratio, mean_ratio, dtype in ratios:
        assert dtype == "float64"
        assert abs(std_ratio - 1) < 1e-12 and abs(norm_ratio - 1) < 1e-12 and abs(mean_ratio - 1) < 1e-9
    assert ints == [-(2**62), 2**53 + 1]
