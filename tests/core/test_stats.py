"""Statistics are computed on device, agree with numpy, and compile once per distinct spec."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core import stats as stats_lib


def numpy_stats(x: np.ndarray) -> dict:
    x = x.astype(np.float64)
    finite = x[np.isfinite(x)]
    return {
        "mean": finite.mean(), "std": finite.std(), "min": finite.min(), "max": finite.max(),
        "norm": np.sqrt((finite ** 2).sum()), "abs_max": np.abs(finite).max(),
        "nan_count": int(np.isnan(x).sum()), "inf_count": int(np.isinf(x).sum()),
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
    [got] = stats_lib.compute_stats([jnp.asarray(x)])
    assert_close(got, numpy_stats(x))


def test_bfloat16_upcast_and_all_nonfinite():
    x = RNG.normal(size=(300,)).astype(np.float32)
    [got] = stats_lib.compute_stats([jnp.asarray(x, jnp.bfloat16)])
    assert_close(got, numpy_stats(np.asarray(jnp.asarray(x, jnp.bfloat16)).astype(np.float32)))
    [nothing] = stats_lib.compute_stats([jnp.array([np.nan, np.inf, np.nan])])
    assert nothing["mean"] is None and nothing["max"] is None
    assert (nothing["nan_count"], nothing["inf_count"]) == (2, 1)


def test_integer_bool_complex_subsets():
    i = RNG.integers(-50, 50, (1000,)).astype(np.int32)
    b = RNG.random(777) < 0.25
    c = (RNG.normal(size=64) + 1j * RNG.normal(size=64)).astype(np.complex64)
    gi, gb, gc = stats_lib.compute_stats([jnp.asarray(i), jnp.asarray(b), jnp.asarray(c)])
    assert_close(gi, {k: v for k, v in numpy_stats(i).items() if k in ("mean", "std", "min", "max", "zero_frac")})
    assert_close(gb, {"mean": b.mean(), "zero_frac": 1 - b.mean()})
    assert_close(gc, {k: v for k, v in numpy_stats(np.abs(c)).items()
                      if k in ("norm", "abs_max", "nan_count", "inf_count", "zero_frac")})


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
    monkeypatch.setattr(stats_lib.jax, "device_get", lambda x: calls.append(x) or real(x))
    snap = nnx_lab.snapshot(net)
    assert len(calls) == 1
    fetched = jax.tree.leaves(calls[0])
    numeric_rows = [r for r in snap.rows if r.stats]
    assert sum(a.size for a in fetched) == 9 * len(numeric_rows)  # O(#variables) numbers, no array data


@pytest.mark.needs_flax("nnx.List")
def test_compiles_once_per_distinct_spec_and_reuses():
    # 12 arrays, 3 distinct (shape, dtype): compile count must follow specs, not arrays.
    class M(nnx.Module):
        def __init__(self):
            self.ws = nnx.List([nnx.Param(jnp.full((17, 3), float(i))) for i in range(6)])
            self.bs = nnx.List([nnx.Param(jnp.full((19,), float(i))) for i in range(4)])
            self.cs = nnx.List([nnx.Param(jnp.full((23,), i, jnp.int32)) for i in range(2)])

    before = stats_lib.kernel_cache_size()
    nnx_lab.snapshot(M())
    after_first = stats_lib.kernel_cache_size()
    assert after_first - before == 3
    m = M()
    for _ in range(3):
        nnx_lab.snapshot(m)
    assert stats_lib.kernel_cache_size() == after_first


def test_the_masked_kernel_is_compiled_only_for_arrays_with_nan_or_inf():
    shape = (29, 7)  # a spec no other test uses
    clean = jnp.asarray(RNG.normal(size=shape).astype(np.float32))
    masked_before = stats_lib._float_masked._cache_size()
    [got] = stats_lib.compute_stats([clean])
    assert_close(got, numpy_stats(np.asarray(clean)))
    assert stats_lib._float_masked._cache_size() == masked_before  # finite: the fast kernel was exact
    dirty = np.asarray(clean).copy()
    dirty[3, 4], dirty[5, 6] = np.nan, -np.inf
    a, b = stats_lib.compute_stats([clean, jnp.asarray(dirty)])
    assert_close(a, numpy_stats(np.asarray(clean)))
    assert_close(b, numpy_stats(dirty))
    assert (b["nan_count"], b["inf_count"]) == (1, 1)
    assert stats_lib._float_masked._cache_size() == masked_before + 1


@pytest.fixture
def kernel_threads(monkeypatch):
    """The name of the thread each statistics kernel was called on."""
    names = []
    real = stats_lib._call
    monkeypatch.setattr(stats_lib, "_call", lambda k, x: names.append(threading.current_thread().name) or real(k, x))
    return names


def test_new_specs_compile_side_by_side_and_agree_with_one_by_one(kernel_threads, monkeypatch):
    threads = kernel_threads
    arrays = [jnp.asarray(RNG.normal(size=(31 + k, 5)).astype(np.float32)) for k in range(4)]
    arrays += [jnp.asarray(RNG.integers(0, 9, (37,)).astype(np.int32))]
    together = stats_lib.compute_stats(arrays)  # five specs never seen: dispatched on threads
    assert sum(name.startswith("nnx_lab-compile") for name in threads) == 5, threads
    monkeypatch.undo()
    for x, got in zip(arrays, together):
        [alone] = stats_lib.compute_stats([x])
        assert got == alone


def test_under_a_thread_local_default_device_everything_runs_on_the_calling_thread(kernel_threads):
    seen = kernel_threads
    arrays = [jnp.asarray(RNG.normal(size=(41 + k, 3)).astype(np.float32)) for k in range(3)]
    with jax.default_device(jax.devices()[0]):
        got = stats_lib.compute_stats(arrays)
    assert all(isinstance(g, dict) for g in got)
    assert set(seen) == {threading.current_thread().name}
