"""Cost against the number of Variables, with treescope and nnx.tabulate beside it, from one run.

A deep model of small blocks (Linear(8, 8) + LayerNorm(8): 4 Variables per block, in an
nnx.List), at 100 ... 100,000 Variables. Each size runs in a fresh process, so "cold" is what a
user's first look costs (kernels compiled included). Printed per size:

  rows       nnx_lab.snapshot(model, stats=False), first call in the process: what a viewer shows
             before its statistics (StateViewer(rows_first=True))
  cold 1st   nnx_lab.snapshot(model), the first with statistics in a first session: kernels compiled
  cold       the same in a later session (a new process): kernels loaded from nnx_lab's disk cache
             (core/snapshot/_executables.py); treescope's and tabulate's ratios are to this
  programs   seconds until a viewer's statistics programs are compiled (in the background)
  warm       a viewer's refresh once its programs are compiled (wall time, waited for): the structure
             reused, the statistics launched and fetched, and what the browser is sent
  per Var    warm / Variables (target: <= 20 us at 10,000)
  first B    bytes of the viewer's first payload (rows and statistics), per Variable
  B/refresh  bytes one later refresh sends (its statistics message), per Variable (target: <= 40)
  paint      first paint of the viewer with the first payload in Chromium (target: <= 300 ms at 100,000)
  scroll     then, scrolling its table top to bottom in 40 jumps: the median and worst time from a jump
             to the second animation frame after it, and (in brackets) two frames with nothing to do
             (this Chromium's cadence): smooth when they are about equal
  treescope  treescope.render_to_html(nnx.state(model)), and its ratio to our cold
  tabulate   nnx.tabulate(model, x), and its ratio to our cold

Run: python benchmarks/bench_scale.py [--sizes 100,1000,10000,100000] [--timeout 900]
     [--treescope-up-to 100000] [--tabulate-up-to 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench_live import viewer_page_times  # noqa: E402 - the benchmark beside this one

CHILD = r"""
import json, statistics, sys, time
import jax, jax.numpy as jnp
from flax import nnx
n, treescope_too, tabulate_too = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[4] == "1"

class Block(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(8, 8, rngs=rngs)
        self.norm = nnx.LayerNorm(8, rngs=rngs)
    def __call__(self, x):
        return self.norm(self.lin(x))

class Deep(nnx.Module):
    def __init__(self, blocks):
        rngs = nnx.Rngs(0)
        self.blocks = nnx.List([Block(rngs) for _ in range(blocks)])
    def __call__(self, x):
        for b in self.blocks:
            x = b(x)
        return x

out = {}
t = time.perf_counter(); model = Deep(n // 4); out["build_s"] = time.perf_counter() - t
import nnx_lab
from nnx_lab.core.stats import _programs as stats_programs
# Imported before the clock starts, as treescope is (this machine sets PYTHONDONTWRITEBYTECODE, so
# every import compiles its source, which a user's installed package does not).
nnx_lab.snapshot, nnx_lab.watch
t = time.perf_counter(); nnx_lab.snapshot(model, stats=False); out["rows_s"] = time.perf_counter() - t
t = time.perf_counter(); snap = nnx_lab.snapshot(model); out["cold_s"] = time.perf_counter() - t
out["variables"] = len(snap.rows)
if sys.argv[5] == "cold":
    print("RESULT" + json.dumps(out))
    sys.exit(0)
viewer = nnx_lab.watch(model, max_rate=100.0, display=False)
t = time.perf_counter()
while stats_programs.programs_compiled() == 0 or stats_programs.compiling():
    if time.perf_counter() - t > 600:
        break
    time.sleep(0.05)
out["program_compile_s"] = time.perf_counter() - t
sent = []
send = viewer.send
viewer.send = lambda content, buffers=None: (sent.append(len(json.dumps(content)) + sum(len(b) for b in buffers or ())),
                                             send(content, buffers))
viewer.refresh()
times = []
for _ in range(5):
    t = time.perf_counter(); viewer.refresh(); times.append(time.perf_counter() - t)
out["warm_s"] = statistics.median(times)
out["refresh_bytes"] = sent[-1] if sent else None
out["payload_bytes"] = len(json.dumps(viewer.snapshot).encode())
with open(sys.argv[3], "w") as f:
    json.dump(viewer.snapshot, f)
if treescope_too:
    import treescope
    state = nnx.state(model)
    t = time.perf_counter(); treescope.render_to_html(state); out["treescope_s"] = time.perf_counter() - t
if tabulate_too:
    x = jnp.ones((1, 8))
    t = time.perf_counter(); nnx.tabulate(model, x); out["tabulate_s"] = time.perf_counter() - t
print("RESULT" + json.dumps(out))
"""


def run(
    n: int, treescope_too: bool, tabulate_too: bool, timeout: float, payload_file: str, mode: str, cache: str
) -> dict | str:
    env = dict(os.environ, NNX_LAB_CACHE_DIR=cache)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                CHILD,
                str(n),
                "1" if treescope_too else "0",
                payload_file,
                "1" if tabulate_too else "0",
                mode,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish in {timeout:.0f} s"
    for line in done.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[len("RESULT") :])
    return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]


def ms(s: float | None) -> str:
    return "—" if s is None else f"{s * 1e3:,.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--treescope-up-to", type=int, default=100000, help="run treescope up to this size")
    parser.add_argument(
        "--tabulate-up-to", type=int, default=10000, help="run nnx.tabulate up to this size (11 minutes at 10,000 here)"
    )
    args = parser.parse_args()
    print(
        f"{'Variables':>9}  {'rows':>8}  {'cold 1st':>9}  {'cold':>9}  {'programs':>8}  {'warm':>9}  {'per Var':>8}  {'first B':>7}  "
        f"{'B/refresh':>9}  {'paint':>7}  {'scroll':>16}  {'treescope':>9}  {'ts/1st':>6}  {'ts/cold':>7}  {'tabulate':>9}  {'tab/cold':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        payload_file = os.path.join(tmp, "payload.json")
        for n in (int(s) for s in args.sizes.split(",")):
            start = time.perf_counter()
            # A fresh kernel cache for each size: the first process compiles (a first session), the
            # second loads what the first kept on disk (any later session).
            cache = os.path.join(tmp, f"kernels-{n}")
            first = run(n, False, False, args.timeout, payload_file, "cold", cache)
            got = run(n, n <= args.treescope_up_to, n <= args.tabulate_up_to, args.timeout, payload_file, "all", cache)
            if isinstance(first, str):
                got = first
            if isinstance(got, str):
                print(f"{n:>9}  {got}  ({time.perf_counter() - start:.0f} s)")
                continue
            with open(payload_file) as f:
                page = viewer_page_times(json.load(f))
            paint = page and page[0]
            scroll = "—" if page is None else f"{page[1]:.0f}/{page[2]:.0f} ({page[4]:.0f}) ms"
            v = got["variables"]
            cold, warm = got["cold_s"], got["warm_s"]
            compiled = first["cold_s"]
            ts, tab = got.get("treescope_s"), got.get("tabulate_s")
            ts_ratio = "" if ts is None else f"{ts / cold:.2f}"
            ts_first = "" if ts is None else f"{ts / compiled:.2f}"
            tab_ratio = "" if tab is None else f"{tab / cold:.2f}"
            per_refresh = "—" if got["refresh_bytes"] is None else f"{got['refresh_bytes'] / v:.1f}"
            print(
                f"{v:>9,}  {ms(got['rows_s']):>8}  {ms(compiled):>9}  {ms(cold):>9}  {got['program_compile_s']:>6.1f} s  {ms(warm):>9}  {warm / v * 1e6:>5.1f} us"
                f"  {got['payload_bytes'] / v:>7.0f}  {per_refresh:>9}  {ms(paint and paint / 1e3):>7}  {scroll:>16}  {ms(ts):>9}  "
                f"{ts_first:>6}  {ts_ratio:>7}  {ms(tab):>9}  {tab_ratio:>8}",
                flush=True,
            )


if __name__ == "__main__":
    main()
