"""What a live viewer costs a training loop, measured paired: one loop alternates short windows of
steps without the viewer's ticks and with them, so every "with" window has a "without" window
right beside it on this shared machine, and the ratio of each adjacent pair is nearly free of the
slow drift that makes whole separate loops disagree by 5-30 % here.

Each window runs a fixed number of steps (about `--window` seconds of them), dispatched without a
host sync, as on an accelerator; a window ends by waiting for its last step and, in a "with" window,
for the viewer's last refresh too (its cost is counted in the window that caused it). The "with"
window ticks the viewer at every step at its default rate (max 2 refreshes/s): the first tick of a
window refreshes, as the first tick after any pause does, so a window of 1 s has the default rate.
Pairs alternate their order (without-with, with-without) so a drift within a pair cancels too.

Printed per setup: the median over pairs of (time without / time with) = the throughput ratio
(want >= 0.98), its bootstrap 95 % interval, the same from process CPU time per step (host work and
the statistics programs: on CPU the "device" is the same two cores), and the refreshes per second
of "with" windows, then of a continuous loop (`--rate-seconds` of steps with the viewer, no window
boundary). The two rates differ where a window's steps are dispatched faster than they run: JAX
queues about a second of steps before the host waits (the CNN's 31-step window is dispatched in
~45 ms here), so a 1 s window's ticks all come in its first tenth and get one refresh; a loop that
runs on, as a real one does, is paced by the device and refreshes at the default rate.

Setups (the MLP of bench_live.py and the CNN of flax's MNIST tutorial, Adam):
  viewer                       watch(model), tick() per step
  model + optimizer viewers    watch(model) and watch(optimizer), each ticked
  everything                   watch(model, optimizer=opt), log(loss=, grads=) + tick(): optimizer
                               state, gradients, the update ratio and the loss curve; both windows
                               run the step that also returns its gradients
flax's example architectures (benchmarks/models.py: the diffusion U-Net, miniGPT on a 2-device mesh in
a subprocess with forced host devices, a ViT, the MNIST tutorial's CNN), everything on, each target
printed as met or not (real_checks.py):
  throughput ratio of the "everything" windows                        (target >= 0.97)
  after-cell refresh: a cell that only defines a function, viewer live minus no viewer, in an IPython
  InteractiveShell with the extension loaded (the post_run_cell hook)  (target <= 50 ms)
  gradient column after a training cell: its step >= the step of the loop's last refresh
  %%nnx_capture model --methods of one jitted forward / that forward's first call   (target <= 2x)
Run: python benchmarks/bench_overhead.py [--pairs 40] [--window 1.0] [--rate-seconds 8] [--models mlp,cnn]
     [--setups viewer,...] [--no-updates] [--real-pairs 10]   (--models unet,minigpt,vit,mnist: the examples)
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from bench_async import CNN, MLP, train_step_grads
from bench_live import train_step
from flax import nnx

import nnx_lab


def window(steps: int, step, viewers, batches, log: bool) -> tuple[float, float, int]:
    """Run `steps` steps; tick `viewers` after each if any. (wall s, process CPU s, refreshes of one
    viewer)."""
    before = sum(v.watcher.refreshes for v in viewers)
    cpu, start = time.process_time(), time.perf_counter()
    out = None
    for i in range(steps):
        out = step(*batches[i % len(batches)])
        if viewers:
            if log:
                loss, grads = out
                viewers[0].log(loss=loss, grads=grads)  # kept by reference, read only at refresh steps
            for v in viewers:
                v.tick()
    jax.block_until_ready(out)
    for v in viewers:
        v.watcher.wait()  # the window's last refresh, published: its cost stays in this window
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall, cpu, (sum(v.watcher.refreshes for v in viewers) - before) / max(len(viewers), 1)


def continuous_rate(step, viewers, batches, log: bool, seconds: float) -> float:
    """Refreshes per second one viewer publishes in a loop of `seconds` of steps (no window)."""
    before = sum(v.watcher.refreshes for v in viewers)
    start, i, out = time.perf_counter(), 0, None
    while time.perf_counter() - start < seconds:
        out = step(*batches[i % len(batches)])
        if log:
            loss, grads = out
            viewers[0].log(loss=loss, grads=grads)
        for v in viewers:
            v.tick()
        i += 1
    jax.block_until_ready(out)
    for v in viewers:
        v.watcher.wait()
    elapsed = time.perf_counter() - start
    return (sum(v.watcher.refreshes for v in viewers) - before) / len(viewers) / elapsed


def bootstrap_median(values: list[float], n: int = 4000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    v = np.asarray(values)
    medians = np.median(rng.choice(v, size=(n, len(v)), replace=True), axis=1)
    return float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975))


def paired(
    setup: str,
    model,
    optimizer,
    batches,
    steps: int,
    pairs: int,
    updates: bool = True,
    rate_seconds: float = 8.0,
    step_grads=None,
) -> dict:
    """``step_grads(*batch) -> (loss, grads)``: the "everything" step (default: bench_async's)."""
    if setup == "everything":
        viewers = [nnx_lab.watch(model, optimizer=optimizer, display=False, updates=updates)]
        step = step_grads or (lambda x, y: train_step_grads(model, optimizer, x, y))  # noqa: E731
    else:
        viewers = [nnx_lab.watch(model, display=False, updates=updates)]
        if setup == "viewers":
            viewers.append(nnx_lab.watch(optimizer, display=False, updates=updates))
        step = lambda x, y: train_step(model, optimizer, x, y)  # noqa: E731
    log = setup == "everything"
    # Warm-up: compile the statistics programs for this setup (series layouts included) and the step.
    for _ in range(3):
        window(steps, step, viewers, batches, log)
    wall_ratio, cpu_ratio, rates = [], [], []
    for p in range(pairs):
        order = (False, True) if p % 2 == 0 else (True, False)
        got = {on: window(steps, step, viewers if on else [], batches, log) for on in order}
        (w0, c0, _), (w1, c1, r1) = got[False], got[True]
        wall_ratio.append(w0 / w1)
        cpu_ratio.append(c0 / c1)
        rates.append(r1 / w1)
    continuous = continuous_rate(step, viewers, batches, log, rate_seconds)
    for v in viewers:
        v.close()
    return {"wall": wall_ratio, "cpu": cpu_ratio, "rate": statistics.median(rates), "continuous": continuous}


def bench(
    name: str, model_cls, shape, seconds: float, pairs: int, setups: list[str], updates: bool, rate_seconds: float
) -> None:
    rng = np.random.default_rng(0)
    batches = [
        (jnp.asarray(rng.normal(size=(64, *shape)), jnp.float32), jnp.asarray(rng.integers(0, 10, 64)))
        for _ in range(4)
    ]
    model = model_cls(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    for _ in range(5):
        jax.block_until_ready(train_step(model, optimizer, *batches[0]))
        jax.block_until_ready(train_step_grads(model, optimizer, *batches[0]))
    start, n, out = time.perf_counter(), 0, None
    while time.perf_counter() - start < 1.0:  # dispatched without a sync, as the windows are
        out = train_step(model, optimizer, *batches[n % 4])
        n += 1
    jax.block_until_ready(out)
    steps = max(5, round(n / (time.perf_counter() - start) * seconds))
    print(
        f"{name}: windows of {steps} steps (~{seconds:.1f} s), {pairs} pairs per setup, {jax.devices()[0].device_kind}"
    )
    for setup, label in (
        ("viewer", "viewer"),
        ("viewers", "model + optimizer viewers"),
        ("everything", "everything (optimizer, grads, updates, loss)"),
    ):
        if setup not in setups:
            continue
        got = paired(setup, model, optimizer, batches, steps, pairs, updates, rate_seconds)
        lo, hi = bootstrap_median(got["wall"])
        clo, chi = bootstrap_median(got["cpu"])
        print(
            f"  {label:<46} throughput ratio {statistics.median(got['wall']):.3f} (95% {lo:.3f}-{hi:.3f})"
            f"   CPU-time ratio {statistics.median(got['cpu']):.3f} ({clo:.3f}-{chi:.3f})"
            f"   refreshes/s {got['rate']:.2f} in windows, {got['continuous']:.2f} in a loop"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--window", type=float, default=1.0, help="seconds of steps per window")
    parser.add_argument("--rate-seconds", type=float, default=8.0, help="seconds of the continuous loop")
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--setups", default="viewer,viewers,everything")
    parser.add_argument(
        "--no-updates",
        action="store_true",
        help="watch(..., updates=False): no update ratio (what holding and diffing the parameters costs)",
    )
    parser.add_argument("--real-pairs", type=int, default=10, help="pairs per example architecture")
    args = parser.parse_args()
    models, setups = args.models.split(","), args.setups.split(",")
    real = [m for m in models if m in ("unet", "minigpt", "vit", "mnist")]
    if real:
        import real_checks  # the examples: imports this module's window/paired

        real_checks.run(real, args.real_pairs, args.window, args.rate_seconds)
    if "mlp" in models:
        bench(
            "MLP 784-512-BN-512-10, batch 64, Adam",
            MLP,
            (784,),
            args.window,
            args.pairs,
            setups,
            not args.no_updates,
            args.rate_seconds,
        )
    if "cnn" in models:
        bench(
            "MNIST tutorial CNN, batch 64, Adam",
            CNN,
            (28, 28, 1),
            args.window,
            args.pairs,
            setups,
            not args.no_updates,
            args.rate_seconds,
        )


if __name__ == "__main__":
    main()
