"""Snapshot cost on a reference transformer-ish model, against its peers, from one run.

Prints, side by side:
  cold snapshot (compile included)  vs  treescope.render_to_html(nnx.state(model))
  a viewer's refresh (program compiled) and a standalone snapshot again
                                    vs  one compiled sum over the same arrays (bandwidth floor)
  to_dict() JSON bytes              vs  treescope's HTML bytes
The ratios are the last lines. A cold time is one number per process (nothing is cold twice), and
this shared machine's noise moves one by 30 % or more: the cold comparison is therefore also made in
fresh processes, each timing both sides in alternating order (first-session kernel cache each
time), and the median of their ratios printed.
Run: python benchmarks/bench_snapshot.py [--cold-pairs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import treescope
from flax import nnx

import nnx_lab
from nnx_lab.core.stats import _dispatch as dispatch_lib  # to count the exact kernels' fallbacks
from nnx_lab.core.stats import _programs as stats_programs  # to wait for the viewer's program


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.ln = nnx.LayerNorm(512, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(8, 512, decode=False, rngs=rngs)
        self.up = nnx.Linear(512, 2048, rngs=rngs)
        self.down = nnx.Linear(2048, 512, rngs=rngs)
        self.bn = nnx.BatchNorm(512, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.blocks = nnx.List([Block(rngs) for _ in range(24)])


def timed(fn, repeat=1):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def cold_pair(ours_first: bool) -> None:
    """In a fresh process: both cold times, in the given order; printed as JSON."""
    os.environ["NNX_LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="nnx_lab-bench-")
    nnx_lab.snapshot, nnx_lab.watch
    model = Model(nnx.Rngs(0))
    ours = lambda: timed(lambda: nnx_lab.snapshot(model))[1]  # noqa: E731
    peer = lambda: timed(lambda: treescope.render_to_html(nnx.state(model)))[1]  # noqa: E731
    if ours_first:
        a = ours()
        b = peer()
    else:
        b = peer()
        a = ours()
    print(json.dumps({"ours": a, "treescope": b}))


def cold_pairs(n: int) -> None:
    ratios = []
    for k in range(n):
        out = (
            subprocess.run(
                [sys.executable, __file__, "--cold-child", str(k % 2)], capture_output=True, text=True, check=True
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        got = json.loads(out)
        ratios.append(got["treescope"] / got["ours"])
        print(
            f"  fresh process {k + 1}: nnx_lab {got['ours'] * 1e3:.0f} ms, treescope {got['treescope'] * 1e3:.0f} ms,"
            f" {ratios[-1]:.2f}x ({'nnx_lab' if k % 2 == 0 else 'treescope'} first)",
            flush=True,
        )
    print(
        f"cold speed-up vs treescope, median of {n} fresh processes: {statistics.median(ratios):.2f}x "
        f"(range {min(ratios):.2f}-{max(ratios):.2f}; target >= 3x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold-pairs", type=int, default=5, help="fresh processes for the cold comparison")
    parser.add_argument("--cold-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child is not None:
        cold_pair(args.cold_child == 0)
        return
    # A first session's cold: no kernel kept on disk by an earlier one (core/snapshot/_executables.py).
    os.environ["NNX_LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="nnx_lab-bench-")
    nnx_lab.snapshot, nnx_lab.watch  # imported before the clock starts, as treescope is
    model = Model(nnx.Rngs(0))
    params = nnx.state(model, nnx.Param)
    n_vars = len(list(nnx.to_flat_state(nnx.state(model))))
    n_params = sum(x.size for x in jax.tree.leaves(params))
    print(
        f"reference model: {n_vars} variables, {n_params / 1e6:.1f} M parameters, "
        f"{jax.devices()[0].device_kind} x{jax.device_count()}"
    )

    # Interleave cold runs so a noisy neighbour hits both sides alike.
    snap, cold_ours = timed(lambda: nnx_lab.snapshot(model))
    html, cold_treescope = timed(lambda: treescope.render_to_html(nnx.state(model)))

    # The floor reads every array a refresh reduces (every numeric Variable) once, in one program.
    arrays = [
        row_array for row_array in jax.tree.leaves(nnx.state(model)) if jnp.issubdtype(row_array.dtype, jnp.number)
    ]
    floor_fn = jax.jit(lambda xs: sum(jnp.sum(x, dtype=jnp.float32) for x in xs))
    jax.block_until_ready(floor_fn(arrays))
    _, warm_floor = timed(lambda: jax.block_until_ready(floor_fn(arrays)), repeat=15)
    # A viewer's refresh once its program is compiled (structure reused, one launch, one fetch),
    # waited for, without the browser; and a standalone snapshot (walk, per-array kernels).
    viewer = nnx_lab.watch(model, max_rate=100.0, display=False)
    deadline = time.perf_counter() + 300
    while stats_programs.programs_compiled() == 0 or stats_programs.compiling():
        if time.perf_counter() > deadline:
            break
        time.sleep(0.05)
    watcher = viewer.watcher
    watcher.refresh(force=True, wait=True)
    # Per-array kernel calls during the timed refreshes: 0 when every float array's one pass was
    # trusted (core/snapshot/_one_pass.py), else the arrays the exact kernels described again.
    fallbacks, real_call = [], dispatch_lib.call
    dispatch_lib.call = lambda kernel, x: fallbacks.append(kernel) or real_call(kernel, x)
    _, warm_viewer = timed(lambda: watcher.refresh(force=True, wait=True), repeat=15)
    dispatch_lib.call = real_call
    one_pass = sum(
        len(p.one_pass) for p in list(stats_programs._programs.values()) if isinstance(p, stats_programs.Program)
    )
    _, warm_ours = timed(lambda: nnx_lab.snapshot(model), repeat=15)
    _, warm_floor2 = timed(lambda: jax.block_until_ready(floor_fn(arrays)), repeat=15)
    warm_floor = min(warm_floor, warm_floor2)

    payload = len(json.dumps(snap.to_dict(), separators=(",", ":")).encode())
    html_bytes = len(html.encode())

    print(f"{'':32s}{'nnx_lab':>14s}{'peer':>14s}")
    print(f"{'cold (compile incl.) / treescope':32s}{cold_ours * 1e3:12.1f}ms{cold_treescope * 1e3:12.1f}ms")
    print(f"{'viewer refresh / compiled sum':32s}{warm_viewer * 1e3:12.1f}ms{warm_floor * 1e3:12.1f}ms")
    print(f"{'snapshot() again / compiled sum':32s}{warm_ours * 1e3:12.1f}ms{warm_floor * 1e3:12.1f}ms")
    print(f"{'payload JSON / treescope HTML':32s}{payload / 1e3:12.1f}KB{html_bytes / 1e3:12.1f}KB")
    print(f"cold speed-up vs treescope: {cold_treescope / cold_ours:.2f}x (target >= 3x)")
    print(
        f"viewer refresh vs bandwidth floor: {warm_viewer / warm_floor:.2f}x (target <= 4x); "
        f"snapshot() again: {warm_ours / warm_floor:.2f}x"
    )
    print(
        f"viewer refresh: {one_pass} float arrays read in one pass each; "
        f"per-array kernel calls in the 15 timed refreshes: {len(fallbacks)}"
    )
    print(f"payload: {payload / 1e3:.1f} KB, {html_bytes / payload:.1f}x smaller than treescope (target <= 60 KB)")
    if args.cold_pairs:
        cold_pairs(args.cold_pairs)


if __name__ == "__main__":
    main()
