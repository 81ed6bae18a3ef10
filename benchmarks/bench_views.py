"""Cost of the view panel on a deep model, from one run, printed as ratios.

  view_report (every instance's set_view options and current values) vs flax's nnx.view_info
  (the per-class text listing) on the same model
  a panel refresh (report + payload) vs nnx.view(model, deterministic=True) (a view's cost)
  payload bytes sent to the browser per set_view instance

Run: python benchmarks/bench_views.py
"""

from __future__ import annotations

import json

from flax import nnx
from timing import interleaved

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


def main() -> None:
    depth = 300
    model = Deep(depth, nnx.Rngs(0))
    panel = ViewPanel(model, namespace={})
    instances = sum(len(c["instances"]) for c in panel.payload["classes"])

    t = interleaved(
        {
            "report": lambda: nnx_lab.view_report(model),
            "info": lambda: nnx.view_info(model),
            "refresh": panel.refresh,
            "view": lambda: nnx.view(model, deterministic=True),
        },
        rounds=3,
    )
    report, info, refresh, view = t["report"], t["info"], t["refresh"], t["view"]
    payload = len(json.dumps(panel.payload).encode())

    print(f"model: {depth} blocks (MultiHeadAttention, Dropout, BatchNorm): {instances} set_view instances")
    print(f"view_report / nnx.view_info:        {report / info:5.2f}x   ({report * 1e3:.1f} ms vs {info * 1e3:.1f} ms)")
    print(
        f"panel refresh / nnx.view(...):      {refresh / view:5.2f}x   ({refresh * 1e3:.1f} ms vs {view * 1e3:.1f} ms)"
    )
    print(f"payload: {payload / 1024:.0f} KB, {payload / instances:.0f} B per instance")


if __name__ == "__main__":
    main()
