"""Issue 38's suggested replacement, measured: ONE ``jax.jit`` over every leaf of a structure, applying
the same per-array statistics kernel, against nnx_lab's statistics programs (arrays grouped into
chunks of one spec, one compiled program per chunk, compiled in the background; ``core/stats``).

bench_scale's deep model (Linear(8, 8) + LayerNorm(8) blocks), each size in a fresh process, one run,
nnx_lab's disk cache off for both (what a first session pays). Printed per size:

  ours compile   seconds until a viewer's statistics programs are compiled
  one-jit        lower + compile of one jitted function over every leaf (the same kernel per leaf)
  ratio          one-jit / ours (> 1: the single jit compiles slower)
  ours warm      a viewer's refresh once compiled (median of 5, waited for: launch, fetch, rows)
  one-jit warm   one call of the single jit and the device_get of its results (median of 5)

Run: python benchmarks/bench_one_jit.py [--sizes 1000,4000] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import jax, jax.numpy as jnp
from flax import nnx
n, which = int(sys.argv[1]), sys.argv[2]

class Block(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(8, 8, rngs=rngs)
        self.norm = nnx.LayerNorm(8, rngs=rngs)

class Deep(nnx.Module):
    def __init__(self, blocks):
        rngs = nnx.Rngs(0)
        self.blocks = nnx.List([Block(rngs) for _ in range(blocks)])

model = Deep(n // 4)
import nnx_lab
from nnx_lab.core.stats import _kernels, _programs
out = {}
if which == "ours":
    t = time.perf_counter()
    viewer = nnx_lab.watch(model, max_rate=100.0, display=False)
    while _programs.programs_compiled() == 0 or _programs.compiling():
        time.sleep(0.02)
    out["compile_s"] = time.perf_counter() - t
    viewer.refresh()
    times = []
    for _ in range(5):
        t = time.perf_counter(); viewer.refresh(); times.append(time.perf_counter() - t)
    out["warm_s"] = statistics.median(times)
else:
    leaves = [x for x in jax.tree.leaves(nnx.state(model)) if hasattr(x, "dtype")]
    kernel = _kernels.kernel_and_names(leaves[0].dtype)[0]
    def all_stats(xs):  # results stacked on the device: two arrays come back, not one per leaf
        results = [kernel(x) for x in xs]
        return jnp.stack([f for f, _ in results]), jnp.stack([c for _, c in results])
    fn = jax.jit(all_stats)
    t = time.perf_counter()
    compiled = fn.lower(leaves).compile()
    out["compile_s"] = time.perf_counter() - t
    jax.device_get(compiled(leaves))
    times = []
    for _ in range(5):
        t = time.perf_counter(); jax.device_get(compiled(leaves)); times.append(time.perf_counter() - t)
    out["warm_s"] = statistics.median(times)
out["variables"] = n
print("RESULT" + json.dumps(out))
"""


def run(n: int, which: str, timeout: float) -> dict | str:
    env = dict(os.environ, NNX_LAB_CACHE_DIR="off")
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(n), which], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return f"did not finish in {timeout:.0f} s"
    for line in done.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[len("RESULT") :])
    return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    print(
        f"{'Variables':>9}  {'ours compile':>12}  {'one-jit':>9}  {'ratio':>6}  {'ours warm':>9}  {'one-jit warm':>12}  {'ratio':>6}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        ours, one = run(n, "ours", args.timeout), run(n, "one", args.timeout)
        if isinstance(ours, str) or isinstance(one, str):
            print(
                f"{n:>9}  ours: {ours if isinstance(ours, str) else 'ok'}  one-jit: {one if isinstance(one, str) else 'ok'}"
            )
            continue
        print(
            f"{n:>9}  {ours['compile_s']:>11.2f}s  {one['compile_s']:>8.2f}s  {one['compile_s'] / ours['compile_s']:>5.1f}×"
            f"  {ours['warm_s'] * 1e3:>7.1f}ms  {one['warm_s'] * 1e3:>10.1f}ms  {one['warm_s'] / ours['warm_s']:>5.2f}×",
            flush=True,
        )


if __name__ == "__main__":
    main()
