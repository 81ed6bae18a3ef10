"""Small models with one seeded fault each, for tests/nonfinite and benchmarks/bench_nonfinite.py."""

import jax
import jax.numpy as jnp
from flax import nnx


class Block(nnx.Module):
    def __init__(self, dim, rngs, fault=None):
        self.linear = nnx.Linear(dim, dim, rngs=rngs)
        self.fault = fault

    def __call__(self, x):
        h = self.linear(x)
        if self.fault == "log":
            h = jnp.log(h)  # NaN where the activation is negative
        elif self.fault == "sqrt":
            h = jnp.sqrt(h * h)  # finite forward; at h == 0 the gradient is 0 * inf
        return jnp.tanh(h) + x


class Stack(nnx.Module):
    def __init__(self, n=6, dim=8, fault_at=None, fault=None, seed=0):
        rngs = nnx.Rngs(seed)
        blocks = [Block(dim, rngs, fault if i == fault_at else None) for i in range(n)]
        self.blocks = getattr(nnx, "List", list)(blocks)  # flax 0.11 takes a plain list
        self.head = nnx.Linear(dim, 1, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def mse(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


class Attention(nnx.Module):
    """Hand-written attention: a mask that hides every key of a row gives 0/0 there."""

    def __init__(self, dim, rngs):
        self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)
        self.out = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x, mask):
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        scores = jnp.exp(q @ k.swapaxes(-1, -2) / jnp.sqrt(q.shape[-1]))
        scores = jnp.where(mask, scores, 0.0)
        weights = scores / scores.sum(-1, keepdims=True)  # 0/0 on a row with every key masked
        return self.out(weights @ v)


class AttnModel(nnx.Module):
    def __init__(self, dim=8, seed=0):
        rngs = nnx.Rngs(seed)
        self.embed = nnx.Linear(dim, dim, rngs=rngs)
        self.attn = Attention(dim, rngs)
        self.norm = nnx.LayerNorm(dim, rngs=rngs)

    def __call__(self, x, mask):
        return self.norm(self.attn(self.embed(x), mask))


class MatmulModel(nnx.Module):
    """A float16 matmul whose products overflow (65504 is float16's largest value)."""

    def __init__(self, dtype=jnp.float16, seed=0):
        rngs = nnx.Rngs(seed)
        self.pre = nnx.Linear(4, 4, rngs=rngs)
        self.big = nnx.Linear(4, 4, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.big.kernel[...] = jnp.full((4, 4), 30000.0, dtype)

    def __call__(self, x):
        return self.big(jnp.abs(self.pre(x)) + 1.0)


class LogLayer(nnx.Module):
    """log(shift) + linear(x): NaN in the layer whose ``shift`` is negative."""

    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.shift = nnx.Param(jnp.ones(()))

    def __call__(self, x):
        return jnp.tanh(self.linear(x)) + jnp.log(self.shift)


class ScannedLayers(nnx.Module):
    """5 LogLayers stacked by nnx.vmap, run by nnx.scan; layer ``bad`` gets shift -1."""

    def __init__(self, bad=None):
        make = nnx.vmap(lambda key: LogLayer(nnx.Rngs(key)), in_axes=0, out_axes=0)
        self.layers = make(jax.random.split(jax.random.key(0), 5))
        if bad is not None:
            self.layers.shift[...] = self.layers.shift[...].at[bad].set(-1.0)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def step(x, layer):
            return layer(x)

        return step(x, self.layers)


class SqrtLayer(LogLayer):
    """sqrt(shift): finite at shift == 0, but its gradient there is infinite."""

    def __call__(self, x):
        return jnp.tanh(self.linear(x)) + jnp.sqrt(self.shift)


class ScannedSqrt(ScannedLayers):
    def __init__(self, zero):
        make = nnx.vmap(lambda key: SqrtLayer(nnx.Rngs(key)), in_axes=0, out_axes=0)
        self.layers = make(jax.random.split(jax.random.key(0), 5))
        self.layers.shift[...] = self.layers.shift[...].at[zero].set(0.0)
