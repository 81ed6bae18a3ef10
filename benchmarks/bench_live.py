"""Cost of a live viewer on a training loop, from one run, printed as ratios.

  throughput with a live viewer (default rate, viewer.track) vs without   (want >= 0.98)
  throughput with a live viewer vs a naive per-step host copy of every parameter (numpy mean/std)
  snapshot payload bytes for a 10 000-variable model
  first paint of the viewer for that model in Chromium (want <= 300 ms), when /usr/bin/chromium exists

Run: python benchmarks/bench_live.py
"""

from __future__ import annotations

import json
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import nnx_lab


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(784, 512, rngs=rngs)
        self.bn = nnx.BatchNorm(512, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.fc2 = nnx.Linear(512, 512, rngs=rngs)
        self.out = nnx.Linear(512, 10, rngs=rngs)

    def __call__(self, x):
        x = self.drop(nnx.relu(self.bn(self.fc1(x))))
        return self.out(nnx.relu(self.fc2(x)))


def loss_fn(model, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def make():
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    return model, optimizer


def run(steps: int, mode: str, model, optimizer, batches) -> float:
    """Seconds for `steps` training steps under `mode`."""
    viewer = nnx_lab.watch(model, display=False) if mode == "viewer" else None
    start = time.perf_counter()
    loop = viewer.track(range(steps)) if viewer else range(steps)
    for i in loop:
        x, y = batches[i % len(batches)]
        loss = train_step(model, optimizer, x, y)
        if mode == "naive":
            for p in jax.tree.leaves(nnx.state(model, nnx.Param)):
                host = np.asarray(p)
                host.mean(), host.std()
    jax.block_until_ready(loss)
    elapsed = time.perf_counter() - start
    if viewer is not None:
        viewer.close()
    return elapsed


def many_variables(n_pairs: int = 5000):
    return nnx.List([nnx.Linear(4, 4, rngs=nnx.Rngs(i)) for i in range(n_pairs)])


def first_paint_ms(payload: dict) -> float | None:
    """Open the built viewer bundle in headless Chromium with `payload`; the viewer reports first paint."""
    got = viewer_page_times(payload)
    return None if got is None else got[0]


# Scrolls the table top to bottom in 40 jumps; per jump, the time until the second animation frame after
# it (the window is redrawn in the first), beside the same two frames with nothing to do (this headless
# Chromium's frame cadence): equal when a redraw fits in a frame.
_SCROLL = """async () => {
  const s = document.querySelector('.nnx-scroll');
  const twoFrames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const idle = [];
  for (let k = 0; k < 20; k++) { const t = performance.now(); await twoFrames(); idle.push(performance.now() - t); }
  idle.sort((a, b) => a - b);
  const frames = [];
  for (let k = 1; k <= 40; k++) {
    const t = performance.now();
    s.scrollTop = Math.floor((s.scrollHeight - s.clientHeight) * k / 40);
    s.dispatchEvent(new Event('scroll'));
    await twoFrames();
    frames.push(performance.now() - t);
  }
  frames.sort((a, b) => a - b);
  return [frames[20], frames[frames.length - 1], document.querySelectorAll('.nnx-scroll tbody tr').length, idle[10]];
}"""


def viewer_page_times(payload: dict) -> tuple[float, float, float, int, float] | None:
    """(first paint ms, median and worst ms per scroll jump, table rows in the DOM, median ms of two idle
    frames) of the built viewer
    bundle in headless Chromium with `payload`; None without Chromium or the bundle."""
    bundle = os.path.join(os.path.dirname(nnx_lab.__file__), "static", "viewer.js")
    if not (os.path.exists("/usr/bin/chromium") and os.path.exists(bundle)):
        return None
    from playwright.sync_api import sync_playwright

    page_html = """<!doctype html><html><body><div id=host></div><script type=module>
    const listeners = {};
    const state = {snapshot: window.PAYLOAD, status: {state: "live", message: "", refreshes: 1,
                   last_refresh: null, cost_ms: null, interval_s: 0.5}, sparkline_stat: "norm"};
    const model = {get: k => state[k], set: (k, v) => { state[k] = v; }, save_changes() {},
      on(name, cb) { (listeners[name] ||= []).push(cb); }, off() {}, send() {}};
    const mod = await import("/viewer.js");
    const el = document.getElementById("host");
    await mod.default.render({model, el});
    </script></body></html>"""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page()
        body = open(bundle, "rb").read()
        page.route("**/viewer.js", lambda route: route.fulfill(body=body, content_type="text/javascript"))
        page.route("**/index.html", lambda route: route.fulfill(body=page_html, content_type="text/html"))
        page.add_init_script(f"window.PAYLOAD = {json.dumps(payload)};")
        times, scroll = [], None
        for _ in range(3):
            page.goto("http://bench.local/index.html")
            times.append(
                page.evaluate(
                    "() => new Promise(r => { const t = setInterval(() => { const el = document.getElementById('host');"
                    " if (el && el.dataset.firstPaintMs) { clearInterval(t); r(Number(el.dataset.firstPaintMs)); } }, 5); })"
                )
            )
        scroll = page.evaluate(_SCROLL)
        browser.close()
    return statistics.median(times), scroll[0], scroll[1], int(scroll[2]), scroll[3]


def main() -> None:
    rng = np.random.default_rng(0)
    batches = [
        (jnp.asarray(rng.normal(size=(128, 784)), jnp.float32), jnp.asarray(rng.integers(0, 10, 128))) for _ in range(8)
    ]
    model, optimizer = make()
    for _ in range(20):  # compile and warm up
        train_step(model, optimizer, *batches[0])
    nnx_lab.snapshot(model)

    steps = 300
    times = {"plain": [], "viewer": [], "naive": []}
    for _ in range(3):  # interleaved, so a noisy neighbour hits every mode alike
        for mode in times:
            times[mode].append(run(steps, mode, model, optimizer, batches))
    rate = {mode: steps / statistics.median(t) for mode, t in times.items()}

    big = many_variables()
    snap = nnx_lab.snapshot(big)
    payload = snap.to_dict()
    payload.update(refresh=1, structure=1)
    payload_bytes = len(json.dumps(payload, separators=(",", ":")).encode())
    paint = first_paint_ms(payload)

    print(
        f"MLP 784-512-BN-Dropout-512-10, batch 128, Adam, nnx.jit; {steps} steps x3 interleaved; "
        f"{jax.devices()[0].device_kind}"
    )
    for mode in times:
        print(f"  {mode:7s} {rate[mode]:8.1f} steps/s")
    print(f"10 000-variable model ({len(snap)} rows): payload {payload_bytes / 1e3:.1f} KB")
    print(f"throughput with viewer / without: {rate['viewer'] / rate['plain']:.3f} (want >= 0.98)")
    print(f"throughput with viewer / naive host copy: {rate['viewer'] / rate['naive']:.2f}x")
    if paint is None:
        print("first paint (10 000 variables): not measured (no /usr/bin/chromium or no built bundle)")
    else:
        print(f"first paint (10 000 variables) in Chromium: {paint:.0f} ms (want <= 300 ms)")


if __name__ == "__main__":
    main()
