"""Cost of capturing intermediates, from one run, printed as ratios.

  a jitted forward pass captured (Intermediate, via %%nnx_capture's Capture) vs the same model
  without its sow calls (outside a capture, flax's legacy sow stores into the model, which retraces)
  describing what was captured (stats + histograms on device, two small fetches) vs a naive
  host copy of every captured array (numpy mean/std/min/max + np.histogram)
  bytes fetched to the host by the report vs bytes the captured arrays hold
  a loop of captured calls through the capture panel (``panel.track``: every call captured,
  descriptions throttled) vs the same loop through flax's own ``nnx.capture``, which only
  collects; and the panel without ``track`` outside a notebook (every call described: a device
  sync per step; in a notebook cell, repeated calls are throttled as in ``track``)

Run: python benchmarks/bench_capture.py
"""

from __future__ import annotations

import jax
import numpy as np
from flax import nnx
from timing import interleaved

import nnx_lab
from nnx_lab.core.capture import flatten_captured


class Block(nnx.Module):
    def __init__(self, width: int, rngs: nnx.Rngs, sow: bool):
        self.linear = nnx.Linear(width, width, rngs=rngs)
        self.norm = nnx.LayerNorm(width, rngs=rngs)
        self.record = sow

    def __call__(self, x):
        h = self.linear(x)
        if self.record:
            self.sow(nnx.Intermediate, "pre", h)
        x = x + nnx.gelu(self.norm(h))
        if self.record:
            self.sow(nnx.Intermediate, "out", x)
        return x


class Net(nnx.Module):
    def __init__(self, depth: int, width: int, rngs: nnx.Rngs, sow: bool = True):
        self.blocks = nnx.List([Block(width, rngs, sow) for _ in range(depth)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


@nnx.jit
def forward(model, x):
    return model(x)


def main() -> None:
    model = Net(depth=24, width=512, rngs=nnx.Rngs(0))
    silent = Net(depth=24, width=512, rngs=nnx.Rngs(0), sow=False)
    x = jax.random.normal(jax.random.key(1), (256, 512))

    def plain():
        jax.block_until_ready(forward(silent, x))

    def captured():
        with nnx_lab.Capture(model) as cap:
            out = forward(model, x)
        jax.block_until_ready((out, jax.tree.leaves(cap.captured)))
        return cap.captured

    plain(), captured()  # compile both traces
    t = interleaved({"plain": plain, "captured": captured})
    t_plain, t_cap = t["plain"], t["captured"]

    state = captured()
    arrays = [v.get_value() for _, v in nnx.to_flat_state(flatten_captured(state))]
    held = sum(a.nbytes for a in arrays)

    def report():
        return nnx_lab.capture_report(state)

    def naive():
        out = []
        for a in arrays:
            h = np.asarray(a)
            out.append((h.mean(), h.std(), h.min(), h.max(), np.histogram(h, bins=16)))
        return out

    report(), naive()
    t = interleaved({"report": report, "naive": naive}, repeats=3)
    t_rep, t_naive = t["report"], t["naive"]

    fetched = []
    real_get = jax.device_get

    def counting_get(tree):
        out = real_get(tree)
        fetched.append(sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(out)))
        return out

    jax.device_get = counting_get
    try:
        report()
    finally:
        jax.device_get = real_get

    steps = 20
    flax_forward = nnx.capture(forward, nnx.Intermediate)
    panel = nnx_lab.capture_panel(model, display=False)

    def flax_loop():
        outs = [flax_forward(model, x) for _ in range(steps)]
        jax.block_until_ready(outs)

    def panel_tracked():
        outs = [panel.run(forward, model, x) for _ in panel.track(range(steps))]
        jax.block_until_ready((outs, jax.tree.leaves(panel.captured)))

    def panel_untracked():
        outs = [panel.run(forward, model, x) for _ in range(steps)]
        jax.block_until_ready((outs, jax.tree.leaves(panel.captured)))

    flax_loop(), panel_tracked(), panel_untracked()  # compile
    t = interleaved({"flax": flax_loop, "tracked": panel_tracked, "untracked": panel_untracked}, rounds=3, repeats=3)
    t_flax, t_tracked, t_untracked = t["flax"], t["tracked"], t["untracked"]

    print(f"model: 24 blocks x 512 wide, batch 256; {len(arrays)} captured arrays, {held / 2**20:.1f} MiB")
    print(
        f"jitted forward captured / without sow:          {t_cap / t_plain:5.2f}x   "
        f"({t_cap * 1e3:.1f} ms vs {t_plain * 1e3:.1f} ms)"
    )
    print(
        f"capture report / naive host copy + numpy:       {t_rep / t_naive:5.2f}x   "
        f"({t_rep * 1e3:.1f} ms vs {t_naive * 1e3:.1f} ms)"
    )
    print(
        f"bytes fetched by the report / bytes captured:   {sum(fetched) / held:.2e}   "
        f"({sum(fetched)} B in {len(fetched)} fetches vs {held} B)"
    )
    print(
        f"{steps}-step loop, panel.track / flax nnx.capture: {t_tracked / t_flax:5.2f}x   "
        f"({t_tracked * 1e3:.0f} ms vs {t_flax * 1e3:.0f} ms)"
    )
    print(
        f"{steps}-step loop, panel without track / flax:     {t_untracked / t_flax:5.2f}x   "
        f"({t_untracked * 1e3:.0f} ms: every call described)"
    )


if __name__ == "__main__":
    main()
