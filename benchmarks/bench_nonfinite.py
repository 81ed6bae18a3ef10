"""What ``find_nonfinite`` costs against one eager forward + backward of the same model (issue 37:
want <= 5x). The model is a small pre-norm transformer (4 blocks, width 64, 4 heads, 32 tokens,
batch 8) with one seeded fault per case:

  forward  - a NaN in block 2's MLP (log of a negative activation): forward search + primitive walk
  backward - a finite forward whose gradient is NaN (sqrt at 0 in block 2): forward run, one
             jax.grad with cotangent taps, and the culprit call's equation-by-equation VJP
  finite   - no fault: the forward run and the full backward search, nothing found

Then flax's example architectures of models.py (``--models unet,minigpt,vit``; the U-Net's loss
with a fixed time and noise, miniGPT on one device), each with one seeded fault: the kernel of the
Linear or Conv in the middle of the model filled with 3e38, so its matmul overflows to Inf/NaN from
finite inputs (a forward fault; the culprit named is that module, the primitive ``dot_general`` or
``conv_general_dilated``).

Both sides run eagerly (find_nonfinite never jits; the baseline is jax.value_and_grad without jit).
Each is timed ``--repeats`` times after one warm-up call; the medians and their ratio are printed.
Run: python benchmarks/bench_nonfinite.py [--repeats 5] [--models transformer,unet,minigpt,vit]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import jax
import jax.numpy as jnp
from flax import nnx

import nnx_lab


class Block(nnx.Module):
    def __init__(self, dim, heads, rngs, fault=None):
        self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(heads, dim, decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
        self.up = nnx.Linear(dim, 4 * dim, rngs=rngs)
        self.down = nnx.Linear(4 * dim, dim, rngs=rngs)
        self.fault = fault

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        h = self.up(self.norm2(x))
        if self.fault == "log":
            h = jnp.log(h)
        elif self.fault == "sqrt":
            h = jnp.sqrt(jnp.maximum(h, 0.0))  # finite; the gradient at exactly 0 is 0 * inf
        return x + self.down(jax.nn.gelu(h))


class Transformer(nnx.Module):
    def __init__(self, fault=None, depth=4, dim=64, heads=4, seed=0):
        rngs = nnx.Rngs(seed)
        self.blocks = getattr(nnx, "List", list)(
            [Block(dim, heads, rngs, fault if i == 2 else None) for i in range(depth)]
        )
        self.head = nnx.Linear(dim, 1, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def eager_step(model, x, y):
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss(params):
        return loss_fn(nnx.merge(graphdef, params, rest, copy=True), x, y)

    value, grads = jax.value_and_grad(loss)(params)
    jax.block_until_ready(grads)
    return value


def example_step(model, loss_fn, args):
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss(params):
        return loss_fn(nnx.merge(graphdef, params, rest, copy=True), *args)

    value, grads = jax.value_and_grad(loss)(params)
    jax.block_until_ready(grads)
    return value


def median_seconds(fn, repeats):
    fn()  # warm-up: the primitives' first compilation
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _example(name: str) -> tuple:
    """(model, loss, args) for one of models.py's architectures, with the overflow fault seeded."""
    import models

    if name == "unet":
        setup = models.make_unet()
        x = setup.batches[0][0]
        t = jnp.full((x.shape[0],), 0.5, jnp.float32)
        noise = jax.random.normal(jax.random.key(2), x.shape)

        def loss(model, x, t, noise):
            return jnp.mean((model(0.5 * noise + 0.5 * x, t) - (x - noise)) ** 2)

        args = (x, t, noise)
    elif name == "minigpt":
        setup = models.make_minigpt(mesh_shape=(1, 1))
        loss, args = models._lm_loss, (setup.batches[0],)
    else:
        setup = models.make_vit()
        loss, args = models._classifier_loss, setup.batches[0]
    layers = [
        (path, m) for path, m in nnx.iter_graph(setup.model) if isinstance(m, (nnx.Linear, nnx.Conv, nnx.LinearGeneral))
    ]
    path, layer = layers[len(layers) // 2]
    layer.kernel[...] = jnp.full_like(layer.kernel[...], 3e38)  # its matmul overflows from finite inputs
    return setup.model, loss, args, "/".join(map(str, path)), setup.mesh


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", default="transformer,unet,minigpt,vit")
    parsed = parser.parse_args()
    repeats = parsed.repeats
    x = jax.random.normal(jax.random.key(1), (8, 32, 64))
    y = jnp.zeros((8, 32, 1))
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; medians of {repeats} runs")
    names = parsed.models.split(",")
    for name in names:
        if name == "transformer":
            continue
        model, loss, args, seeded, mesh = _example(name)
        import models

        with models._use_mesh(mesh) if mesh is not None else contextlib.nullcontext():  # as the example trains
            base = median_seconds(lambda m=model, f=loss, a=args: example_step(m, f, a), repeats)
            report = nnx_lab.find_nonfinite(loss, model, *args)
            found = f"{report.direction} {report.module_path} {report.primitive}"
            cost = median_seconds(lambda m=model, f=loss, a=args: nnx_lab.find_nonfinite(f, m, *a), repeats)
        print(
            f"{name:9s} seeded in {seeded}; found: {found}\n{'':9s} eager fwd+bwd {base * 1e3:8.1f} ms   "
            f"find_nonfinite {cost * 1e3:8.1f} ms   ratio {cost / base:5.2f}x"
        )
    for case, fault in (("forward", "log"), ("backward", "sqrt"), ("finite", None)) if "transformer" in names else ():
        model = Transformer(fault)
        if case == "backward":  # zero one column of block 2's `up` so that its input to sqrt is exactly 0
            up = model.blocks[2].up
            up.kernel[...] = up.kernel[...].at[:, 0].set(0.0)
            up.bias[...] = up.bias[...].at[0].set(0.0)
        base = median_seconds(lambda model=model: eager_step(model, x, y), repeats)
        report = nnx_lab.find_nonfinite(loss_fn, model, x, y)
        found = f"{report.direction} {report.module_path} {report.primitive}"
        cost = median_seconds(lambda model=model: nnx_lab.find_nonfinite(loss_fn, model, x, y), repeats)
        print(
            f"{case:9s} found: {found:28s} eager fwd+bwd {base * 1e3:8.1f} ms   "
            f"find_nonfinite {cost * 1e3:8.1f} ms   ratio {cost / base:5.2f}x"
        )


if __name__ == "__main__":
    main()
