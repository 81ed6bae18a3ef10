"""Stacked-layer models (nnx.vmap / nnx.scan over blocks) and a check of a snapshot's layer rows against
numpy: shared by tests/core/snapshot/test_layers.py and tests/core/stats/test_stats_programs.py."""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_lab.core import compat

RNG = np.random.default_rng(3)


class Block(nnx.Module):
    def __init__(self, rngs, annotate=False):
        init = nnx.initializers.lecun_normal()
        if annotate:
            init = nnx.with_partitioning(init, ("embed", "mlp"))
        self.lin = nnx.Linear(4, 6, kernel_init=init, rngs=rngs)
        self.norm = nnx.LayerNorm(6, rngs=rngs)
        self.steps = nnx.Variable(jnp.arange(3, dtype=jnp.int32))


class Model(nnx.Module):
    def __init__(self, blocks):
        self.blocks = blocks
        self.head = nnx.Linear(6, 2, rngs=nnx.Rngs(9))


def vmapped(n=3, annotate=False, metadata=True):
    kwargs = {"transform_metadata": {nnx.PARTITION_NAME: "layers"}} if metadata else {}
    make = nnx.vmap(lambda key: Block(nnx.Rngs(key), annotate), in_axes=0, out_axes=0, **kwargs)
    with _mesh() if annotate else contextlib.nullcontext():
        return Model(make(jax.random.split(jax.random.key(0), n)))


def scanned(n=4, annotate=False):
    make = nnx.scan(
        lambda key: Block(nnx.Rngs(key), annotate),
        in_axes=0,
        out_axes=0,
        transform_metadata={nnx.PARTITION_NAME: "layers"},
    )
    with _mesh() if annotate else contextlib.nullcontext():
        return Model(make(jax.random.split(jax.random.key(1), n)))


def _mesh():
    mesh = jax.make_mesh((1, 1), ("embed", "mlp"))
    if hasattr(jax, "set_mesh"):
        return jax.set_mesh(mesh)
    return jax.sharding.use_mesh(mesh)


def randomize(model):
    """Distinct numbers per layer (the initial biases and norms are all zeros and ones)."""
    for _, v in nnx.iter_graph(model):
        if isinstance(v, nnx.Param):
            x = np.asarray(compat.get_value(v))
            compat.set_value(
                v, jnp.asarray(RNG.normal(size=x.shape).astype(x.dtype) * (1 + np.arange(x.size).reshape(x.shape) % 5))
            )
    return model


def assert_layers_equal_numpy(snap, path, array, axis):
    parent = snap[path]
    layers = [r for r in snap.rows if r.layer_of is not None and snap.rows[r.layer_of].path == parent.path]
    assert [r.layer for r in layers] == list(range(array.shape[axis]))
    assert parent.layer_axis == axis
    for r in layers:
        x = np.take(array, r.layer, axis=axis).astype(np.float64)
        assert r.shape == x.shape and r.size == x.size
        assert r.path_text == f"{snap[path].path_text}[layer {r.layer}]"
        s = r.stats
        if np.issubdtype(array.dtype, np.integer):
            assert (s["min"], s["max"]) == (int(x.min()), int(x.max()))
            assert s["mean"] == pytest.approx(x.mean())
            continue
        assert s["mean"] == pytest.approx(x.mean(), rel=1e-5, abs=1e-6)
        assert s["std"] == pytest.approx(x.std(), rel=1e-4, abs=1e-6)
        assert (s["min"], s["max"]) == (pytest.approx(x.min()), pytest.approx(x.max()))
        assert s["norm"] == pytest.approx(np.sqrt((x * x).sum()), rel=1e-5)
        assert s["abs_max"] == pytest.approx(np.abs(x).max())
        assert s["zero_frac"] == pytest.approx((x == 0).mean())
    whole = np.asarray(array, np.float64)
    assert parent.stats["mean"] == pytest.approx(whole.mean(), rel=1e-5, abs=1e-6)  # the group: all layers
