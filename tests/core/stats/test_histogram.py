"""Histograms of a capture's values: counts as numpy's, one compiled kernel per shape."""

import jax.numpy as jnp
import numpy as np
import pytest

from nnx_lab.core.stats import _histogram, histograms_dispatch, histograms_fetch


def _arrays():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 6, 6, 3)).astype(np.float32)
    a[0, 0, 0, 0] = np.nan
    a[1, 0, 0, 0] = np.inf
    return [jnp.asarray(a), jnp.asarray(rng.uniform(-2, 5, size=(7, 11)).astype(np.float32)), jnp.arange(10.0)]


@pytest.mark.parametrize("bins", [1, 4, 16])
def test_counts_are_numpys_over_the_finite_values(bins):
    arrays = _arrays()
    for x, got in zip(arrays, histograms_fetch(histograms_dispatch(arrays, bins))):
        values = np.asarray(x, np.float64).reshape(-1)
        values = values[np.isfinite(values)]
        lo, hi, *counts = got
        assert (lo, hi) == pytest.approx((values.min(), values.max()), rel=1e-3)
        assert sum(counts) == values.size and len(counts) == bins
        expected, _ = np.histogram(values, bins=bins, range=(values.min(), values.max()))
        # values on a bin's edge may fall either side in float32: at most one per edge moves
        assert np.abs(np.asarray(counts) - expected).sum() <= 2 * (bins - 1)


def test_one_kernel_per_shape_and_bins_reused_and_bounded(monkeypatch):
    monkeypatch.setattr(_histogram, "_kernels", type(_histogram._kernels)())
    arrays = _arrays()
    first = histograms_fetch(histograms_dispatch(arrays, 8))
    assert len(_histogram._kernels) == 3
    again = [x + 0 for x in arrays] + [jnp.zeros((7, 11))]  # new arrays, shapes seen before
    assert histograms_fetch(histograms_dispatch(again, 8))[:3] == first
    assert len(_histogram._kernels) == 3  # same shapes, dtypes, device and bins: compiled once each
    histograms_dispatch(arrays, 4)
    assert len(_histogram._kernels) == 6
    monkeypatch.setattr(_histogram, "MAX_KERNELS", 4)
    histograms_dispatch(arrays[:1], 2)
    assert len(_histogram._kernels) == 4  # the least recently used went


def test_a_deleted_array_gets_no_histogram_and_the_others_theirs():
    arrays = _arrays()
    gone = jnp.ones((7, 11)) * 2
    gone.delete()
    got = histograms_fetch(histograms_dispatch([arrays[0], gone, arrays[2]], 4))
    assert got[1] is None and got[0] is not None and got[2] == [0.0, 9.0, 3, 2, 2, 3]


SHARDED = r"""
import json
import jax, jax.numpy as jnp, numpy as np
from nnx_lab.core.stats import _histogram
from nnx_lab.core.stats import histograms_dispatch, histograms_fetch, histograms_prepare

mesh = jax.make_mesh((2,), ("model",))
x = jax.device_put(jnp.linspace(-2.0, 2.0, 64 * 16).reshape(64, 16).at[3, 3].set(jnp.nan),
                   jax.NamedSharding(mesh, jax.P(None, "model")))
histograms_prepare([x], bins=4)  # compiled on the caller's thread here: launches nothing
compiled = len(_histogram._kernels)
[row] = histograms_fetch(histograms_dispatch([x], bins=4))
again = histograms_fetch(histograms_dispatch([x * 2], bins=4))  # same shape and sharding: reused
v = np.asarray(x).ravel()
v = v[np.isfinite(v)]
print(json.dumps({"compiled": compiled, "after": len(_histogram._kernels), "row": row,
                  "numpy": np.histogram(v, bins=4, range=(v.min(), v.max()))[0].tolist(), "again": again[0] is not None}))
"""


def test_an_array_sharded_over_devices_gets_a_kernel_compiled_beforehand_and_numpys_counts():
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["compiled"] == got["after"] == 1  # prepared once, reused by both dispatches
    assert got["row"][2:] == got["numpy"] and got["again"]
