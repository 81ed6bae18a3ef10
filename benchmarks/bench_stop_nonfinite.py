"""What ``stop_on_nonfinite=True`` costs a training loop (issue 37 §2: target throughput >= 0.98).

Paired windows, as bench_overhead.py: one loop alternates windows of steps ticked with
``viewer.tick(loss=, grads=, stop_on_nonfinite=True)`` and without it (both log the loss and the
gradients and tick a viewer of the model and its optimizer; steps are queued without a host sync).
Printed per model: the median over pairs of (time without / time with) = the throughput ratio and
its bootstrap 95 % interval, then the same with ``keep_last_good=True`` (its copy's bytes too).
Models: the MLP of bench_async.py (a queued-steps loop) and flax's diffusion U-Net (models.py).
First, per model, the floor any check read one step later has here: the same loop without a viewer,
waiting at each step only for the previous step's loss (a scalar's isfinite) against not waiting.
On a CPU the host shares the cores with the "device", so that wait alone costs about 0.89 on the MLP.
Run: python benchmarks/bench_stop_nonfinite.py [--pairs 20] [--window 0.5] [--models mlp,unet]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from bench_async import MLP, train_step_grads
from bench_overhead import bootstrap_median
from flax import nnx
from models import make_unet

import nnx_lab


def window(steps: int, step, viewer, batches, **guard) -> float:
    start = time.perf_counter()
    out = None
    for i in range(steps):
        out = step(*batches[i % len(batches)])
        viewer.tick(loss=out[0], grads=out[1], **guard)
    jax.block_until_ready(out)
    viewer.watcher.wait()
    return time.perf_counter() - start


@jax.jit
def _flag(x):
    return jnp.isfinite(x)


def lag_floor(name: str, step, batches, pairs: int) -> None:
    """Throughput of a bare loop that waits for the previous step's loss flag, against no wait."""

    def run(steps: int, lag: bool) -> float:
        start, previous, out = time.perf_counter(), None, None
        for i in range(steps):
            out = step(*batches[i % len(batches)])
            flag = _flag(out[0])
            flag.copy_to_host_async()
            if lag and previous is not None:
                np.asarray(previous)
            previous = flag
        jax.block_until_ready(out)
        return time.perf_counter() - start

    for _ in range(3):
        run(10, False), run(10, True)
    ratios = [run(100, False) / run(100, True) for _ in range(pairs)]
    lo, hi = bootstrap_median(ratios)
    print(f"{name}: floor (a bare loop waiting one step behind): {np.median(ratios):.3f} (95% CI {lo:.3f}-{hi:.3f})")


def ratio(name: str, model, optimizer, step, batches, seconds: float, pairs: int, keep: bool) -> None:
    viewer = nnx_lab.watch(model, optimizer=optimizer, display=False)
    on = {"stop_on_nonfinite": True, "keep_last_good": keep}
    for _ in range(3):  # compiled: the step, the statistics, the flags program
        window(5, step, viewer, batches, **on)
        window(5, step, viewer, batches)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        n += 1
        jax.block_until_ready(step(*batches[n % len(batches)]))
    steps = max(5, round(n / (time.perf_counter() - start) * seconds))
    ratios = []
    for p in range(pairs):
        order = (False, True) if p % 2 == 0 else (True, False)
        got = {o: window(steps, step, viewer, batches, **(on if o else {})) for o in order}
        ratios.append(got[False] / got[True])
    lo, hi = bootstrap_median(ratios)
    window(1, step, viewer, batches, **on)
    kept = viewer.watcher.guard.status() if keep else []
    what = "stop_on_nonfinite + keep_last_good" if keep else "stop_on_nonfinite"
    print(
        f"{name}: {what}: throughput ratio {np.median(ratios):.3f} (95% CI {lo:.3f}-{hi:.3f}), "
        f"windows of {steps} steps, {pairs} pairs{'; ' + kept[0] if kept else ''}"
    )
    viewer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--window", type=float, default=0.5)
    parser.add_argument("--models", default="mlp,unet")
    parser.add_argument("--no-keep", action="store_true", help="skip the keep_last_good runs")
    args = parser.parse_args()
    print(f"device: {jax.devices()[0].device_kind}")
    for name in args.models.split(","):
        if name == "mlp":
            model = MLP(nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
            rng = np.random.default_rng(0)
            batches = [
                (jnp.asarray(rng.normal(size=(64, 784)), jnp.float32), jnp.asarray(rng.integers(0, 10, 64)))
                for _ in range(4)
            ]
            step = partial(train_step_grads, model, optimizer)
            label = "MLP 784-512-BN-512-10, batch 64, Adam"
        else:
            setup = make_unet()
            model, optimizer, step, batches, label = (
                setup.model, setup.optimizer, setup.step, setup.batches, "diffusion U-Net, batch 32, AdamW",
            )  # fmt: skip
        lag_floor(label, step, batches, args.pairs)
        for keep in (False,) if args.no_keep else (False, True):
            ratio(label, model, optimizer, step, batches, args.window, args.pairs, keep)


if __name__ == "__main__":
    main()
