"""A live viewer on a training loop that dispatches steps asynchronously (no host sync per step), as
a real GPU/TPU loop does; CPU jax queues steps the same way. From one run, interleaved rounds:

  throughput with a viewer (viewer.track, default rate) vs without              (want >= 0.98)
  throughput with a model viewer + an optimizer viewer vs without               (want >= 0.98)
  throughput with one viewer showing everything (optimizer state beside the parameters, the step's
  gradients, the update ratio, the loss curve) vs the same loop without it, its step also returning
  the gradients                                                                  (want >= 0.98)
  refreshes per second the viewer published during the loop                     (want >= 1.5)
  the same, once the first refresh has come back through the device's queue (a loop's steady state:
  before that, the numbers are still behind the queued steps; the queue is about 1-2 s deep here)
  the same loop with a refresh that waits for the device (the old design): ratio and refreshes/s
  what one refresh costs in CPU time (host work + the statistics program; on CPU the "device" is the
  same two cores the steps run on), measured apart, and the throughput ratio it implies at the
  measured refresh rate: 1 - rate x cost / (CPU seconds the plain loop uses per second)

Each round runs every mode once, in an order rotated from round to round; a ratio is the median over
rounds of (mode / that round's plain loop), printed with the rounds' lowest and highest.
for the MLP of bench_live.py and the CNN of flax's MNIST tutorial.
Run: python benchmarks/bench_async.py [--rounds 7] [--mlp-seconds 6] [--cnn-seconds 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from bench_live import loss_fn, train_step  # the same step: nnx.jit, value_and_grad, optimizer.update
from flax import nnx

import nnx_lab
from nnx_lab.core.stats import _programs as stats_programs  # to wait for the statistics program


@nnx.jit
def train_step_grads(model, optimizer, x, y):
    """bench_live's step, also returning the gradients it computed (for viewer.log(grads=...))."""
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss, grads


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(784, 512, rngs=rngs)
        self.bn = nnx.BatchNorm(512, rngs=rngs)
        self.fc2 = nnx.Linear(512, 512, rngs=rngs)
        self.out = nnx.Linear(512, 10, rngs=rngs)

    def __call__(self, x):
        x = x.reshape(x.shape[0], -1)
        return self.out(nnx.relu(self.fc2(nnx.relu(self.bn(self.fc1(x))))))


class CNN(nnx.Module):
    """flax's MNIST tutorial model."""

    def __init__(self, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.linear2(nnx.relu(self.linear1(x)))


class Blocking:
    """The old design, for comparison: every refresh waits for its numbers (and so for the queue)."""

    def __init__(self, viewer):
        self.viewer = viewer

    def track(self, it):
        for item in it:
            yield item
            self.viewer._watcher.refresh(wait=True)


def run(mode: str, model, optimizer, batches, seconds: float) -> tuple[float, float, float, float]:
    """(steps per second, refreshes per second, steady refreshes per second, process CPU seconds per
    second) for a loop of about `seconds`, steps never synced."""
    viewers = []
    if mode in ("viewer", "viewers", "blocking"):
        viewers.append(nnx_lab.watch(model, display=False))
    if mode == "everything":  # optimizer state, gradients, updates and the loss curve in one viewer
        viewers.append(nnx_lab.watch(model, optimizer=optimizer, display=False))
    if mode == "viewers":
        viewers.append(nnx_lab.watch(optimizer, display=False))
    before = viewers[0].status["refreshes"] if viewers else 0
    published = []  # when the model viewer published, during the loop
    if viewers:
        # Each published refresh updates the status (its count); the rows trait changes only with the structure.
        viewers[0].observe(
            lambda change: (
                published.append(time.perf_counter())
                if change["new"].get("refreshes") != change["old"].get("refreshes")
                else None
            ),
            names="status",
        )
    steps, loss = 0, None
    cpu = time.process_time()
    start = time.perf_counter()

    def until_time_is_up():
        i = 0
        while time.perf_counter() - start < seconds:
            yield i
            i += 1

    loop = until_time_is_up()
    if mode == "blocking":
        loop = Blocking(viewers[0]).track(loop)
    elif viewers:
        loop = viewers[0].track(loop)
    for i in loop:
        x, y = batches[i % len(batches)]
        if mode == "plain+grads":  # the baseline of "everything": the same step, returning its gradients
            loss, grads = train_step_grads(model, optimizer, x, y)
        elif mode == "everything":  # the gradients the step computed anyway, returned with the loss
            loss, grads = train_step_grads(model, optimizer, x, y)
            viewers[0].log(loss=loss, grads=grads)  # kept by reference, read only at refresh steps
        else:
            loss = train_step(model, optimizer, x, y)  # not synced: queued, as on an accelerator
        for extra in viewers[1:]:
            extra.tick()
        steps += 1
    jax.block_until_ready(loss)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    refreshes = (viewers[0].status["refreshes"] - before) if viewers else 0
    during = [t for t in published if t <= start + seconds]
    steady = (len(during) - 1) / (during[-1] - during[0]) if len(during) > 2 else 0.0
    for v in viewers:
        v.close()
    return steps / elapsed, refreshes / elapsed, steady, cpu / elapsed


def refresh_cpu(obj, n: int = 30) -> float:
    """CPU seconds (every thread of this process: host work and the statistics program) one refresh
    of a viewer of `obj` costs, once its program is compiled; nothing else running."""
    viewer = nnx_lab.watch(obj, display=False)
    watcher = viewer.watcher
    deadline = time.perf_counter() + 120
    while watcher.refreshes < 3 or (stats_programs.compiling() and time.perf_counter() < deadline):
        watcher.refresh(force=True, wait=True)
        time.sleep(0.05)
    cpu = time.process_time()
    for _ in range(n):
        watcher.refresh(force=True, wait=True)
    cost = (time.process_time() - cpu) / n
    viewer.close()
    return cost


def bench(name: str, model_cls, shape, seconds: float, rounds: int) -> None:
    rng = np.random.default_rng(0)
    batches = [
        (jnp.asarray(rng.normal(size=(64, *shape)), jnp.float32), jnp.asarray(rng.integers(0, 10, 64)))
        for _ in range(4)
    ]
    model = model_cls(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    for _ in range(5):
        jax.block_until_ready(train_step(model, optimizer, *batches[0]))
    nnx_lab.snapshot(model), nnx_lab.snapshot(optimizer)  # compile the statistics kernels
    for _ in range(5):
        jax.block_until_ready(train_step_grads(model, optimizer, *batches[0]))
    modes = ("plain", "viewer", "viewers", "plain+grads", "everything", "blocking")
    got = {m: [] for m in modes}
    for r in range(rounds):  # interleaved, so a noisy neighbour hits every mode alike; order rotated
        for m in modes[r % len(modes) :] + modes[: r % len(modes)]:
            got[m].append(run(m, model, optimizer, batches, seconds))
    # Each round's ratio against that round's plain run, then the median: the machine is shared and
    # its speed drifts between rounds more than within one.
    plain = statistics.median(s for s, *_ in got["plain"])
    print(
        f"{name}: {plain:.1f} steps/s without a viewer ({rounds} interleaved rounds of {seconds:.0f} s, "
        f"{jax.devices()[0].device_kind})"
    )
    for m, label in (
        ("viewer", "viewer"),
        ("viewers", "model + optimizer viewers"),
        (
            "everything",
            "viewer with optimizer, grads, updates, loss (vs a plain loop whose step also returns its gradients)",
        ),
        ("blocking", "viewer, refresh waiting for the device (old)"),
    ):
        base = got["plain+grads" if m == "everything" else "plain"]  # the same step without a viewer
        ratios = [s / p for (s, *_), (p, *_) in zip(got[m], base)]
        refreshes = statistics.median(r for _, r, _, _ in got[m])
        steady = statistics.median(r for _, _, r, _ in got[m])
        print(
            f"  {label:<46} throughput ratio {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
            f"   refreshes/s {refreshes:.2f}   steady {steady:.2f}"
        )
    # What the ratio should be, from what a refresh costs measured apart (the loop's noise left out).
    loop_cpu = statistics.median(c for *_, c in got["plain"])
    model_cost, opt_cost = refresh_cpu(model), refresh_cpu(optimizer)
    rate = statistics.median(r for _, r, _, _ in got["viewers"])
    print(
        f"  one refresh's CPU: model {model_cost * 1e3:.2f} ms, optimizer {opt_cost * 1e3:.2f} ms; the plain loop "
        f"uses {loop_cpu:.2f} CPU s/s; implied ratio: viewer {1 - rate * model_cost / loop_cpu:.3f}, "
        f"model + optimizer {1 - rate * (model_cost + opt_cost) / loop_cpu:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mlp-seconds", type=float, default=6)
    # A loop's first refresh comes back only when the device reaches it, behind the steps queued
    # before it (about 1.5 s of CNN steps here): a loop this long is mostly the steady state a
    # training run is in, and the whole-loop rate still counts that first wait.
    parser.add_argument("--cnn-seconds", type=float, default=20)
    args = parser.parse_args()
    bench("MLP 784-512-BN-512-10, batch 64, Adam", MLP, (784,), seconds=args.mlp_seconds, rounds=args.rounds)
    bench("MNIST tutorial CNN, batch 64, Adam", CNN, (28, 28, 1), seconds=args.cnn_seconds, rounds=args.rounds)


if __name__ == "__main__":
    main()
