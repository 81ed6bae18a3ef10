"""Cost of the view panel on a deep model, from one run, printed as ratios.

  view_report (every instance's set_view options and current values) vs flax's nnx.view_info
  (the per-class text listing) on the same model
  a panel refresh (report + payload) vs nnx.view(model, deterministic=True) (a view's cost)
  payload bytes sent to the browser per set_view instance

Run: python benchmarks/bench_views.py
"""

from __future__ import annotations

import json
import statistics
import time

from flax import nnx

import nnx_lab
from nnx_lab.widgets.views import ViewPanel


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.attn = nnx.MultiHeadAttention(2, 8, decode=False, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.norm = nnx.BatchNorm(8, rngs=rngs)


class Deep(nnx.Module):
    def __init__(self, depth: int, rngs: nnx.Rngs):
        self.blocks = nnx.List([Block(rngs) for _ in range(depth)])


def timed(fn, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    depth = 300
    model = Deep(depth, nnx.Rngs(0))
    panel = ViewPanel(model, namespace={})
    instances = sum(len(c["instances"]) for c in panel.payload["classes"])

    t_report, t_info, t_refresh, t_view = [], [], [], []
    for _ in range(3):  # interleaved: the machine is shared and noisy
        t_report.append(timed(lambda: nnx_lab.view_report(model)))
        t_info.append(timed(lambda: nnx.view_info(model)))
        t_refresh.append(timed(panel.refresh))
        t_view.append(timed(lambda: nnx.view(model, deterministic=True)))
    report, info, refresh, view = (statistics.median(t) for t in (t_report, t_info, t_refresh, t_view))
    payload = len(json.dumps(panel.payload).encode())

    print(f"model: {depth} blocks (MultiHeadAttention, Dropout, BatchNorm): {instances} set_view instances")
    print(f"view_report / nnx.view_info:        {report / info:5.2f}x   ({report * 1e3:.1f} ms vs {info * 1e3:.1f} ms)")
    print(f"panel refresh / nnx.view(...):      {refresh / view:5.2f}x   ({refresh * 1e3:.1f} ms vs {view * 1e3:.1f} ms)")
    print(f"payload: {payload / 1024:.0f} KB, {payload / instances:.0f} B per instance")


if __name__ == "__main__":
    main()
