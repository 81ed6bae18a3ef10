"""A checkpoint's statistics, streamed block by block: the fast kernel (every value finite) and the
exact one (NaN and Inf masked and counted) give a snapshot's numbers, whichever blocks hold what."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.checkpoint import checkpoint_rows

ocp = pytest.importorskip("orbax.checkpoint", reason="orbax-checkpoint is the checkpoint extra")

from test_checkpoint import save  # noqa: E402 - after the skip: orbax is needed


def expected(x: np.ndarray) -> dict:
    finite = x[np.isfinite(x)].astype(np.float64)
    return {
        "mean": finite.mean(),
        "std": finite.std(),
        "min": finite.min(),
        "max": finite.max(),
        "norm": math.sqrt((finite * finite).sum()),
        "nan_count": int(np.isnan(x).sum()),
        "inf_count": int(np.isinf(x).sum()),
        "zero_frac": float((x == 0).mean()),
    }


@pytest.mark.parametrize("chunk", [None, 4096])  # one stored chunk (one block), or many small blocks
def test_blocks_with_and_without_nan_inf_and_zeros_give_the_numbers(tmp_path, chunk):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(64, 256)) * 3 + 100).astype(np.float32)  # a large mean: the shift keeps the variance
    x[5, :40] = 0.0
    y = x.copy()
    y[10, 3], y[40, 7], y[41, 8] = np.nan, np.inf, -np.inf  # in some blocks only
    state = {"x": nnx.Param(jnp.asarray(x)), "y": nnx.Param(jnp.asarray(y))}
    path = save(tmp_path / "ckpt", state, chunk)
    # blocks of 4 KiB (4 rows): 16 a stream where the array is stored in chunks of 4 KiB
    streamed = {tuple(r["path"]): r["stats"] for r in checkpoint_rows(path, chunk_bytes=4 * 4096).rows}
    whole = {r.path: r.stats for r in nnx_lab.snapshot(path).rows}
    for name, data in (("x", x), ("y", y)):
        want, got = expected(data), streamed[(name,)]
        assert whole[(name,)] == pytest.approx(got, rel=1e-5, nan_ok=True)
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-5), (name, key)


def test_a_block_of_only_nan_has_no_finite_statistics(tmp_path):
    state = {"z": nnx.Param(jnp.full((8, 8), jnp.nan))}
    got = nnx_lab.snapshot(save(tmp_path / "ckpt", state)).rows[0].stats
    assert got["nan_count"] == 64 and math.isnan(got["mean"]) and math.isnan(got["std"])
