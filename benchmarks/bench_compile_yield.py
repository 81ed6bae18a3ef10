"""What a viewer's background program compile costs the user's own compile running at the same time.

A viewer compiles its statistics program on a thread while the notebook goes on; a cell that jits a
training step at that moment competes with it for the cores. nnx_lab's background compiles run at
the lowest CPU priority (``core/snapshot/_kernels.py``: ``in_background``), so the user's compile
gets the cores first. One run, interleaved rounds:

  alone          the user's compile (flax's ViT training step, benchmarks/models.py), nothing else
  beside ours    the same compile while a viewer program over --arrays arrays compiles, as shipped
  not yielding   the same, with the background compile at the usual priority (LOW_PRIORITY = 0)

Printed: the median user compile time of each and the ratios to "alone" (1.0: no cost). Both
compiles are XLA's CPU compiles here (on a GPU machine the user's compile is also the host's work).
The disk cache is off (every program compiles). Linux only (a thread's own niceness).

Run: python benchmarks/bench_compile_yield.py [--rounds 5] [--arrays 400]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

os.environ["NNX_LAB_CACHE_DIR"] = "off"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import models  # noqa: E402
from nnx_lab.core.snapshot import _kernels, _programs  # noqa: E402


def user_lowered(salt: float = 0.0):
    """The ViT example's training step (benchmarks/models.py) as a pure function of its state,
    lowered once: each round compiles it afresh, as a cell's first call of a new jit does."""
    from flax import nnx

    setup = models.make_vit()
    graphdef, state = nnx.split((setup.model, setup.optimizer))

    def step(state, images, labels):
        model, optimizer = nnx.merge(graphdef, state)
        images = images * (1.0 + salt)  # a new program each round (jax keeps compiled ones)
        loss, grads = nnx.value_and_grad(models._classifier_loss)(model, images, labels)
        optimizer.update(model, grads)
        return loss, nnx.state((model, optimizer))

    return jax.jit(step).lower(state, *setup.batches[0]), len(jax.tree.leaves(state))


def viewer_program(n: int, round_: int) -> threading.Thread:
    """Start a viewer program's compile over ``n`` arrays of distinct shapes; its thread."""
    arrays = [jnp.ones((k % 61 + 3, k // 61 + 2), jnp.float32) for k in range(n)]
    kernels = [_kernels.float_kernel] * n
    before = set(threading.enumerate())
    assert _programs.program_for(kernels, arrays, background=True, eager=True,
                                 key=("bench_compile_yield", round_, time.perf_counter())) is None
    (thread,) = [t for t in threading.enumerate() if t not in before and t.name == "nnx_lab-program"]
    return thread


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--arrays", type=int, default=400)
    args = parser.parse_args()
    lowered, n_state = user_lowered()
    rounds = iter(range(1, 10**6))
    print(f"user compile: the ViT training step ({n_state} arrays); viewer program: "
          f"{args.arrays} arrays; {args.rounds} rounds, {jax.devices()[0].device_kind}", flush=True)
    times: dict[str, list[float]] = {"alone": [], "beside ours": [], "not yielding": []}
    lowered.compile()  # warm: the first compile of a session pays for XLA's own start-up
    for r in range(args.rounds):
        for label in times:
            thread = None
            lowered, _ = user_lowered(next(rounds) * 1e-6)  # not timed: lowering is Python, not the compile
            if label != "alone":
                _kernels.LOW_PRIORITY = 19 if label == "beside ours" else 0
                thread = viewer_program(args.arrays, r * 3 + len(times[label]))
                deadline = time.monotonic() + 60  # its lowering (Python) done, XLA's compile started
                while not any(t.name == "nnx_lab-compile-low" for t in threading.enumerate()):
                    if time.monotonic() > deadline or not thread.is_alive():
                        raise RuntimeError("the viewer program's compile never started")
                    time.sleep(0.002)
            start = time.perf_counter()
            lowered.compile()
            times[label].append(time.perf_counter() - start)
            if thread is not None:
                thread.join()
    _kernels.LOW_PRIORITY = 19
    alone = statistics.median(times["alone"])
    for label, got in times.items():
        m = statistics.median(got)
        print(f"  {label:<13} user compile {m:6.2f} s  ({m / alone:4.2f}x alone)")


if __name__ == "__main__":
    main()
