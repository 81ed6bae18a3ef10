"""A one-off ``snapshot(model)`` of a model seen before, beside a viewer's refresh of it, in one run.

Issue 24's target: a second ``snapshot()`` of an unchanged model in a session costs at most 2x a
viewer's warm refresh (it reuses the structure, launch plan, programs and one-pass guesses a viewer
reuses; it used to walk the model with flax every time: ~0.4 ms per Variable).

    python benchmarks/bench_snapshot_again.py [--blocks 2500]   # 4 Variables per block
"""

from __future__ import annotations

import argparse
import statistics
import time

from flax import nnx

import nnx_lab
from nnx_lab.core.stats import _programs
from nnx_lab.core.watcher import Watcher


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(8, 8, rngs=rngs)
        self.norm = nnx.LayerNorm(8, rngs=rngs)


class Stack(nnx.Module):
    def __init__(self, n):
        blocks = [Block(nnx.Rngs(i)) for i in range(n)]
        self.blocks = nnx.List(blocks) if hasattr(nnx, "List") else blocks


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def settle() -> None:
    while _programs.compiling():
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    model = Stack(args.blocks)
    first = timed(lambda: nnx_lab.snapshot(model))
    for _ in range(2):  # the structure's program compiles on a thread the second time it is seen
        nnx_lab.snapshot(model)
        settle()
    watcher = Watcher(model, max_rate=100.0)
    watcher.refresh(force=True)
    settle()
    watcher.refresh(force=True)
    again, refresh = [], []
    for _ in range(args.repeats):  # interleaved: the machine's drift hits both alike
        again.append(timed(lambda: nnx_lab.snapshot(model)))
        refresh.append(timed(lambda: watcher.refresh(force=True)))
    a, r = statistics.median(again), statistics.median(refresh)
    print(
        f"{args.blocks * 4:,} Variables: first snapshot {first:.2f} s; snapshot again {a * 1e3:.0f} ms, "
        f"viewer refresh {r * 1e3:.0f} ms: {a / r:.2f}x (target <= 2x: {'met' if a <= 2 * r else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
