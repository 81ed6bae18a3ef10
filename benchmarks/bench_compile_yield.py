"""What a viewer's background program compile costs the user's own compile running at the same time.

A viewer compiles its statistics program on a thread while the notebook goes on; a cell that jits a
training step at that moment competes with it for the cores. nnx_lab's background compiles wait while
another thread is inside XLA's compile (``core/stats/_compiling.py``: ``in_background``). One run,
interleaved rounds; in each, the user's compile starts and a viewer program's compile is asked for
right after it:

  alone          the user's compile (flax's ViT training step, benchmarks/models.py), nothing else
  beside ours    the same, a viewer program over --arrays arrays asked for meanwhile, as shipped
  not yielding   the same, with the program compiling at once (YIELD_TO_USER_COMPILES = False)

Printed: the median user compile time of each and the ratios to "alone" (1.0: no cost), and how long
after the user's compile the viewer's program was ready. The disk cache is off (every program
compiles).

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

from nnx_lab.core.stats import _compiling, _kernels, _programs  # noqa: E402


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


def viewer_arrays(n: int) -> list:
    """``n`` arrays of distinct shapes (made before the rounds: making them compiles too)."""
    return [jnp.ones((k % 61 + 3, k // 61 + 2), jnp.float32) for k in range(n)]


def viewer_program(arrays: list, round_: int) -> threading.Thread:
    """Start a viewer program's compile over ``arrays``; its thread."""
    kernels = [_kernels.float_kernel] * len(arrays)
    before = set(threading.enumerate())
    assert (
        _programs.program_for(
            kernels, arrays, background=True, eager=True, key=("bench_compile_yield", round_, time.perf_counter())
        )
        is None
    )
    (thread,) = [t for t in threading.enumerate() if t not in before and t.name == "nnx_lab-program"]
    return thread


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--arrays", type=int, default=400)
    args = parser.parse_args()
    lowered, n_state = user_lowered()
    arrays = viewer_arrays(args.arrays)
    rounds = iter(range(1, 10**6))
    print(
        f"user compile: the ViT training step ({n_state} arrays); viewer program: "
        f"{args.arrays} arrays; {args.rounds} rounds, {jax.devices()[0].device_kind}",
        flush=True,
    )
    times: dict[str, list[float]] = {"alone": [], "beside ours": [], "not yielding": []}
    after: dict[str, list[float]] = {"beside ours": [], "not yielding": []}
    lowered.compile()  # warm: the first compile of a session pays for XLA's own start-up
    for r in range(args.rounds):
        for label in times:
            lowered, _ = user_lowered(next(rounds) * 1e-6)  # not timed: lowering is Python, not the compile
            box: dict = {}
            trigger = None
            if label != "alone":
                _compiling.YIELD_TO_USER_COMPILES = label == "beside ours"

                key = len(times[label]) + 10 * r

                def ask(box=box, key=key):
                    while not _compiling.others_compiling():  # the user's compile has begun
                        time.sleep(0.002)
                    box["thread"] = viewer_program(arrays, key)

                trigger = threading.Thread(target=ask, name="bench-trigger")
                trigger.start()
            start = time.perf_counter()
            lowered.compile()
            end = time.perf_counter()
            times[label].append(end - start)
            if trigger is not None:
                trigger.join()
                box["thread"].join()
                after[label].append(time.perf_counter() - end)
    _compiling.YIELD_TO_USER_COMPILES = True
    alone = statistics.median(times["alone"])
    for label, got in times.items():
        m = statistics.median(got)
        extra = (
            f"; the viewer's program ready {statistics.median(after[label]):.2f} s after it" if label in after else ""
        )
        print(f"  {label:<13} user compile {m:6.2f} s  ({m / alone:4.2f}x alone){extra}")


if __name__ == "__main__":
    main()
