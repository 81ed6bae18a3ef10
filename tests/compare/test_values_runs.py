"""The value program's run partials, summed on the host: odd sizes, empty arrays, layers, NaN, Inf."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from nnx_lab.core.compare import _values


def reference(a: np.ndarray, b: np.ndarray, tol: float) -> tuple[list, list]:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        d = a64 - b64
        differ = a.view(np.uint32) != b.view(np.uint32)
        changed = ~(np.abs(d) <= tol) & differ
    floats = [(d * d).sum(), (a64 * a64).sum(), (b64 * b64).sum(), (a64 * b64).sum(), np.abs(d).max(initial=0.0)]
    ints = [int(changed.sum()), int(differ.sum()), int(np.isnan(a).sum()), int(np.isnan(b).sum())]
    return floats, ints


def check(got: _values.Partials, a: np.ndarray, b: np.ndarray, tol: float) -> None:
    floats, ints = reference(a, b, tol)
    assert got.ints == ints and got.size == a.size
    for g, r in zip(got.floats, floats):
        assert (math.isnan(g) and math.isnan(r)) or g == pytest.approx(r, rel=1e-5, abs=1e-6)


def test_every_pair_and_layer_matches_float64_numpy():
    rng = np.random.default_rng(0)
    a = {
        "odd": rng.standard_normal(5001).astype(np.float32),  # no run width divides it: one run
        "empty": np.zeros((3, 0), np.float32),
        "layers": rng.standard_normal((4, 3, 4096)).astype(np.float32),
        "nan": rng.standard_normal(8192).astype(np.float32),
        "inf": np.array([np.inf, 1.0, -2.0, 3.0] * 32, np.float32),
    }
    b = {k: v + np.float32(0.01) * (rng.standard_normal(v.shape).astype(np.float32) > 1) for k, v in a.items()}
    a["nan"][7] = np.nan
    b["inf"] = a["inf"].copy()  # inf - inf: a NaN difference although bit-identical
    axes = {"layers": 0}
    pairs = [(jnp.asarray(a[k]), jnp.asarray(b[k]), axes.get(k)) for k in a]
    out = dict(zip(a, _values.device_partials(pairs, 0.005)))
    for k in ("odd", "empty", "nan", "inf"):
        (got,) = out[k]
        check(got, a[k], b[k], 0.005)
    assert len(out["layers"]) == 4
    for i, got in enumerate(out["layers"]):
        check(got, a["layers"][i], b["layers"][i], 0.005)
    # a NaN difference makes max |a-b| NaN whatever the CPU's vectorized max did with it
    assert math.isnan(out["nan"][0].floats[4]) and math.isnan(out["inf"][0].floats[4])
    assert out["inf"][0].metrics()["identical"] and out["empty"][0].metrics()["frac_changed"] == 0.0
