"""nnx_lab.summary against nnx.tabulate(compute_flops=True), side by side in one run.

Two models: the reference transformer of bench_snapshot.py (24 blocks of LayerNorm, 8-head attention
over 512 features, a 512-2048-512 MLP, BatchNorm and Dropout) given a forward pass, and a chain of
500 Linear layers (1,000 Variables). For each: tabulate's time (it lowers and compiles every module
call); nnx_lab.summary's first call in this process as a user makes it (one trace and the costs: the
table, what tabulate reports), then the peak memory it compiles when first asked for (XLA's memory
analysis of the whole program, which tabulate does not report; the widget shows the table meanwhile
and the line when the compile is done); the speed-ups (target >= 20x) and the total FLOPs both report
(per call they agree row by row: tests/summary). Then a Llama-2-70B-shaped model from nnx.eval_shape
under a mesh, summarised from its shapes (target < 5 s).
Run: python benchmarks/bench_summary.py   (newest flax: Colab's 0.11 has no compute_flops)
"""

from __future__ import annotations

import os
import sys
import time

import jax
import jax.numpy as jnp
from flax import nnx

sys.path.insert(0, os.path.dirname(__file__))
from bench_snapshot import Block as ReferenceBlock  # noqa: E402  the reference transformer's block

import nnx_lab  # noqa: E402


class Block(ReferenceBlock):
    def __call__(self, x):
        x = x + self.attn(self.ln(x))
        x = x + self.down(nnx.relu(self.up(x)))
        return self.drop(self.bn(x.reshape(-1, x.shape[-1])).reshape(x.shape))


class Transformer(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, depth: int = 24):
        self.blocks = nnx.List([Block(rngs) for _ in range(depth)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class Chain(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, n: int = 500):
        self.layers = nnx.List([nnx.Linear(16, 16, rngs=rngs) for _ in range(n)])

    def __call__(self, x):
        for layer in self.layers:
            x = nnx.relu(layer(x))
        return x


def tabulate_total_flops(model, x) -> int:
    """The model row's flops in tabulate's table."""
    text = nnx.tabulate(
        model,
        x,
        compute_flops=True,
        depth=0,
        console_kwargs={"width": 2000, "no_color": True, "force_terminal": False},
    )
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) > 4 and cells[1] == type(model).__name__ and cells[4].isdigit():
            return int(cells[4])
    raise RuntimeError("no model row in tabulate's table")


def compare(name: str, model, x) -> None:
    n_vars = len(list(nnx.to_flat_state(nnx.state(model))))
    start = time.perf_counter()
    default = nnx_lab.summary(model, x)  # the first call in this process: the peak memory not compiled yet
    ours_default = time.perf_counter() - start
    start = time.perf_counter()
    peak = default.memory  # XLA's memory analysis: one compile (the widget runs it on a thread)
    ours_memory = time.perf_counter() - start
    start = time.perf_counter()
    like = nnx_lab.summary(model, x, memory=False)
    ours_like = time.perf_counter() - start
    start = time.perf_counter()
    theirs_flops = tabulate_total_flops(model, x)
    theirs = time.perf_counter() - start
    print(f"{name}: {n_vars} Variables, {len(like.rows)} module calls, input {tuple(x.shape)}")
    print(f"  nnx.tabulate(compute_flops=True):          {theirs:7.2f} s   FLOPs {theirs_flops:,}")
    print(
        f"  nnx_lab.summary() (default), first call:   {ours_default:7.2f} s   FLOPs {default.flops:,}  "
        "(shapes, parameters, FLOPs, bytes: the table; peak memory compiled when first asked for)"
    )
    print(
        f"  then its peak memory (Summary.memory):     {ours_memory:7.2f} s   (one compile of the whole program; "
        f"peak {peak and peak['peak']:,} B; the widget shows the table meanwhile)"
    )
    print(f"  nnx_lab.summary(memory=False), again:      {ours_like:7.2f} s")
    ratio = theirs / ours_default
    print(
        f"  speed-up of the default {ratio:.1f}x (target >= 20x: {'met' if ratio >= 20 else 'NOT met'}); "
        f"until the peak memory is there too {theirs / (ours_default + ours_memory):.1f}x; "
        f"FLOPs ours/tabulate {default.flops / theirs_flops:.6f}",
        flush=True,
    )


def abstract_70b() -> None:
    """The Llama-2-70B-shaped model of tests/summary/lm.py from nnx.eval_shape under a 2x4 mesh of forced
    host devices (a fresh process: the devices are set before jax starts), summarised from its shapes."""
    import json
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from tests.summary.test_summary_large import SCRIPT  # the test's script: the same model and call

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, root], capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        print(f"abstract 70B: failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        return
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"abstract 70B (nnx.eval_shape, 2x4 mesh, {out['params']:,} parameters, {out['flops']:.3g} FLOPs): "
        f"summary(memory=False) {out['fast']:.2f} s (target < 5 s: {'met' if out['fast'] < 5 else 'NOT met'}); "
        f"peak RSS {out['rss'] / 2**30:.1f} GiB (its arrays would be 256 GiB)",
        flush=True,
    )


def main() -> None:
    print(
        f"{jax.devices()[0].device_kind} x{jax.device_count()}, jax {jax.__version__}, flax "
        f"{__import__('flax').__version__}"
    )
    nnx_lab.summary  # imported before the clock starts, as nnx.tabulate is
    compare("reference transformer", Transformer(nnx.Rngs(0)), jnp.ones((2, 16, 512)))
    compare("1,000-Variable chain", Chain(nnx.Rngs(0)), jnp.ones((4, 16)))
    abstract_70b()


if __name__ == "__main__":
    main()
