"""A scanned stack for the capture tests: values sown inside ``nnx.scan`` over layers made by
``nnx.vmap`` (stacked on axis 0), with or without flax's layer metadata."""

from __future__ import annotations

import contextlib

import jax
from flax import nnx


class ScanBlock(nnx.Module):
    def __init__(self, rngs, annotate=False):
        init = nnx.initializers.lecun_normal()
        if annotate:
            init = nnx.with_partitioning(init, ("in", "out"))
        self.linear = nnx.Linear(3, 3, kernel_init=init, rngs=rngs)

    def __call__(self, x):
        y = self.linear(x)
        self.sow(nnx.Intermediate, "y", y)
        return y


class Scanned(nnx.Module):
    """blocks: 4 ScanBlocks stacked by nnx.vmap, run by nnx.scan (their sown `y` stacked on axis 0)."""

    def __init__(self, metadata=False):
        kwargs = {"transform_metadata": {nnx.PARTITION_NAME: "layers"}} if metadata else {}
        make = nnx.vmap(lambda key: ScanBlock(nnx.Rngs(key), annotate=metadata), in_axes=0, out_axes=0, **kwargs)
        mesh = jax.make_mesh((1, 1), ("in", "out"))
        with jax.set_mesh(mesh) if metadata and hasattr(jax, "set_mesh") else contextlib.nullcontext():
            self.blocks = make(jax.random.split(jax.random.key(0), 4))

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def step(x, block):
            return block(x)

        return step(x, self.blocks)
