"""A Llama-2-70B-shaped language model (80 scanned layers, grouped-query attention, SwiGLU) whose
Variables carry logical sharding names, for summaries of abstract models (``nnx.eval_shape``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

CONFIG = dict(vocab=32_000, dim=8192, layers=80, heads=64, kv_heads=8, hidden=28_672)


def _init(names):
    return nnx.with_partitioning(nnx.initializers.lecun_normal(), names)


class Attention(nnx.Module):
    def __init__(self, dim, heads, kv_heads, rngs):
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nnx.Linear(dim, dim, use_bias=False, kernel_init=_init((None, "model")), rngs=rngs)
        self.kv = nnx.Linear(
            dim,
            2 * kv_heads * self.head_dim,
            use_bias=False,
            kernel_init=_init((None, "model")),
            rngs=rngs,
        )
        self.o = nnx.Linear(dim, dim, use_bias=False, kernel_init=_init(("model", None)), rngs=rngs)

    def __call__(self, x):
        b, t, _ = x.shape
        q = self.q(x).reshape(b, t, self.kv_heads, self.heads // self.kv_heads, self.head_dim)
        k, v = jnp.split(self.kv(x).reshape(b, t, self.kv_heads, 2 * self.head_dim), 2, axis=-1)
        scores = jnp.einsum("btkgd,bskd->bkgts", q, k) / jnp.sqrt(self.head_dim).astype(x.dtype)
        mask = jnp.tril(jnp.ones((t, t), bool))
        weights = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
        out = jnp.einsum("bkgts,bskd->btkgd", weights, v).reshape(b, t, -1)
        return self.o(out)


class Layer(nnx.Module):
    def __init__(self, dim, heads, kv_heads, hidden, rngs):
        self.norm1 = nnx.RMSNorm(dim, rngs=rngs)
        self.attn = Attention(dim, heads, kv_heads, rngs)
        self.norm2 = nnx.RMSNorm(dim, rngs=rngs)
        self.gate = nnx.Linear(dim, hidden, use_bias=False, kernel_init=_init((None, "model")), rngs=rngs)
        self.up = nnx.Linear(dim, hidden, use_bias=False, kernel_init=_init((None, "model")), rngs=rngs)
        self.down = nnx.Linear(hidden, dim, use_bias=False, kernel_init=_init(("model", None)), rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        h = self.norm2(x)
        return x + self.down(nnx.silu(self.gate(h)) * self.up(h))


class LM(nnx.Module):
    def __init__(self, rngs, vocab, dim, layers, heads, kv_heads, hidden):
        self.embed = nnx.Embed(vocab, dim, embedding_init=_init(("model", None)), rngs=rngs)

        @nnx.split_rngs(splits=layers)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def make(rngs):
            return Layer(dim, heads, kv_heads, hidden, rngs)

        self.layers = make(rngs)
        self.norm = nnx.RMSNorm(dim, rngs=rngs)

    def __call__(self, tokens):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def step(x, layer):
            return layer(x)

        x = step(self.embed(tokens), self.layers)
        return self.embed.attend(self.norm(x))


def abstract(**overrides):
    """The model from ``nnx.eval_shape`` (nothing allocated), in bfloat16."""
    config = dict(CONFIG, **overrides)
    return nnx.eval_shape(lambda: LM(nnx.Rngs(0), **config))
