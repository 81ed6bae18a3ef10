"""Histograms of a capture's values: counts as numpy's, one compiled kernel per shape."""

import jax.numpy as jnp
import numpy as np
import pytest

from nnx_lab.core.stats import histograms_dispatch, histograms_fetch


def some_arrays():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 6, 6, 3)).astype(np.float32)
    a[0, 0, 0, 0] = np.nan
    a[1, 0, 0, 0] = np.inf
    return [jnp.asarray(a), jnp.asarray(rng.uniform(-2, 5, size=(7, 11)).astype(np.float32)), jnp.arange(10.0)]


@pytest.mark.parametrize("bins", [1, 4, 16])
def test_counts_are_numpys_over_the_finite_values(bins):
    arrays = some_arrays()
    for x, got in zip(arrays, histograms_fetch(histograms_dispatch(arrays, bins))):
        values = np.asarray(x, np.float64).reshape(-1)
        values = values[np.isfinite(values)]
        lo, hi, *counts = got
        assert (lo, hi) == pytest.approx((values.min(), values.max()), rel=1e-3)
        assert sum(counts) == values.size and len(counts) == bins
        expected, _ = np.histogram(values, bins=bins, range=(values.min(), values.max()))
        # values on a bin's edge may fall either side in float32: at most one per edge moves
        assert np.abs(np.asarray(counts) - expected).sum() <= 2 * (bins - 1)


def test_a_deleted_array_gets_no_histogram_and_the_others_theirs():
    arrays = some_arrays()
    gone = jnp.ones((7, 11)) * 2
    gone.delete()
    got = histograms_fetch(histograms_dispatch([arrays[0], gone, arrays[2]], 4))
    assert got[1] is None and got[0] is not None and got[2] == [0.0, 9.0, 3, 2, 2, 3]
