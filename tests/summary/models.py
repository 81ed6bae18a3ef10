"""The four models issue 28 checks the summary's FLOPs on (after flax's examples, at small sizes), and
the reference it is checked against: each module call lowered on its own and costed by XLA, exactly as
``nnx.tabulate(compute_flops=True)`` does (flax 0.11, Colab's, has no ``compute_flops``)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(8, 32, rngs=rngs)
        self.l2 = nnx.Linear(32, 4, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))


class CNN(nnx.Module):
    """flax's MNIST CNN with BatchNorm and Dropout (on 16x16 images: tabulate compiles every call)."""

    def __init__(self, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.bn1 = nnx.BatchNorm(8, rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.bn2 = nnx.BatchNorm(16, rngs=rngs)
        self.drop = nnx.Dropout(0.2, rngs=rngs)
        self.linear = nnx.Linear(16 * 4 * 4, 10, rngs=rngs)

    def __call__(self, x):
        pool = functools.partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        x = pool(nnx.relu(self.bn1(self.conv1(x))))
        x = pool(nnx.relu(self.bn2(self.conv2(x))))
        x = self.drop(x.reshape(x.shape[0], -1))
        return self.linear(x)


class Block(nnx.Module):
    """A pre-norm transformer block with self-attention."""

    def __init__(self, rngs: nnx.Rngs, dim: int = 32, heads: int = 4):
        self.ln1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(heads, dim, decode=False, rngs=rngs)
        self.ln2 = nnx.LayerNorm(dim, rngs=rngs)
        self.up = nnx.Linear(dim, 4 * dim, rngs=rngs)
        self.down = nnx.Linear(4 * dim, dim, rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.down(nnx.gelu(self.up(self.ln2(x))))


class Scanned(nnx.Module):
    """Blocks made with nnx.vmap and run with nnx.scan (flax's scan-over-layers pattern)."""

    def __init__(self, rngs: nnx.Rngs, n: int = 3, dim: int = 16):
        @nnx.split_rngs(splits=n)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def make(rngs):
            return Block(rngs, dim=dim, heads=2)

        self.blocks = make(rngs)
        self.head = nnx.Linear(dim, 2, rngs=rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def step(x, block):
            return block(x)

        return self.head(step(x, self.blocks))


NAMES = ("mlp", "cnn", "block", "scanned")


def model(name: str):
    """``(model, input)`` for one of :data:`NAMES`, built afresh."""
    cls, shape = {
        "mlp": (MLP, (4, 8)),
        "cnn": (CNN, (1, 16, 16, 1)),
        "block": (Block, (2, 6, 32)),
        "scanned": (Scanned, (2, 5, 16)),
    }[name]
    return cls(nnx.Rngs(0)), jnp.ones(shape)


def tabulate_flops(model, x) -> dict:
    """``nnx.tabulate(compute_flops=True)``'s flops column (newest flax only): row path -> flops."""
    text = nnx.tabulate(
        model,
        x,
        compute_flops=True,
        console_kwargs={"width": 2000, "no_color": True, "force_terminal": False},
    )
    names = None
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│" if "│" in line else "┃")[1:-1]]
        if not cells:
            continue
        if names is None and "flops" in cells:
            names = cells
            continue
        if names and len(cells) == len(names) and cells[names.index("flops")].isdigit():
            out[cells[0]] = int(cells[names.index("flops")])
    return out


def reference_flops(model, x) -> dict:
    """Each module call lowered alone and costed by XLA, as tabulate does: path -> flops (per call; the
    last call's for a module called more than once). Marks ``model``'s modules: use a throwaway model."""
    rows = {}
    modules = list(nnx.iter_modules(model) if hasattr(nnx, "iter_modules") else model.iter_modules())
    for path, m in modules:
        m._ref_path = "/".join(map(str, path))  # static: survives nnx.scan's split/merge, as tabulate's id does
    originals = {type(m): vars(type(m))["__call__"] for _, m in modules if "__call__" in vars(type(m))}

    def wrap(fn):
        def wrapper(self, *args, **kwargs):
            graphdef, state = nnx.split((self, args, kwargs))

            @jax.jit
            def jit_f(state):
                obj, a, k = nnx.merge(graphdef, state)
                return fn(obj, *a, **k)

            rows[getattr(self, "_ref_path", "?")] = int(jit_f.lower(state).cost_analysis()["flops"])
            return fn(self, *args, **kwargs)

        return wrapper

    try:
        for cls, fn in originals.items():
            cls.__call__ = wrap(fn)
        model(x)
    finally:
        for cls, fn in originals.items():
            cls.__call__ = fn
    return rows
