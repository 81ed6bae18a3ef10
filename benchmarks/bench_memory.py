"""The memory ledger's cost (issue 36): ``nnx_lab.memory()`` with 10,000 live arrays reached from a
namespace of 1,000 names (target ≤ 100 ms), and the post-run hook on a cell that did not fail
(target ≤ 1 ms). Also checks that each device's ledger total equals its live buffers' bytes.

    python benchmarks/bench_memory.py [--arrays 10000] [--names 1000]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

import jax
import jax.numpy as jnp
from flax import nnx

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from timing import interleaved  # noqa: E402

import nnx_lab  # noqa: E402
from nnx_lab._ipython import cell_hooks  # noqa: E402


def namespace(arrays: int, names: int) -> dict:
    """``names`` names: a tenth models (5 Linear layers: 10 arrays each), 4 tenths dicts and half
    single arrays, sized so that they reach ``arrays`` live arrays in all."""
    ns: dict = {}
    n_models = names // 10
    n_single = names // 2
    n_dicts = names - n_models - n_single
    in_dicts = max(n_dicts, arrays - 10 * n_models - n_single - len(jax.live_arrays()))
    rngs = nnx.Rngs(0)
    for i in range(n_models):
        ns[f"model_{i}"] = nnx.Sequential(*[nnx.Linear(4, 4, rngs=rngs) for _ in range(5)])
    for i in range(n_dicts):
        per_dict = in_dicts // n_dicts + (i < in_dicts % n_dicts)
        ns[f"grads_{i}"] = {f"w{j}": jnp.full((8,), float(j)) for j in range(per_dict)}
    for i in range(n_single):
        ns[f"x_{i}"] = jnp.full((16,), float(i))
    return ns


class Result:
    error_in_exec = None


class Failed:
    error_in_exec = ValueError("an ordinary error " * 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrays", type=int, default=10_000)
    parser.add_argument("--names", type=int, default=1_000)
    args = parser.parse_args()
    ns = namespace(args.arrays, args.names)
    gc.collect()
    live = len(jax.live_arrays())
    ledger = nnx_lab.memory(namespace=ns)
    exact = all(d.ledger_bytes == d.live_bytes for d in ledger.devices)
    times = interleaved({"ledger": lambda: nnx_lab.memory(namespace=ns)}, rounds=5, repeats=3)
    cpu = []
    for _ in range(5):  # CPU time: on the shared machine's load, less inflated than wall time
        started_cpu = time.process_time()
        nnx_lab.memory(namespace=ns)
        cpu.append(time.process_time() - started_cpu)
    started = time.perf_counter()
    text = ledger.to_text()
    render = time.perf_counter() - started
    print(f"jax {jax.__version__}, {jax.default_backend()}; {live} live arrays, {len(ns)} names")
    ms = times["ledger"] * 1e3
    cpu_ms = sorted(cpu)[len(cpu) // 2] * 1e3
    print(
        f"ledger: {ms:.1f} ms wall, {cpu_ms:.1f} ms CPU (target <= 100 ms: {'met' if ms <= 100 else 'NOT met'} "
        f"by wall time); to_text() {render * 1e3:.1f} ms"
    )
    print(f"per-device total equals the live buffers' bytes: {exact}; {len(ledger.rows)} rows, {len(text)} characters")
    hook = interleaved(
        {"ok": lambda: cell_hooks._post_run_cell(Result()), "other error": lambda: cell_hooks._post_run_cell(Failed())},
        rounds=5,
        repeats=2000,
    )
    for name, seconds in hook.items():
        us = seconds * 1e6
        print(f"post-run hook, cell {name}: {us:.1f} µs (target <= 1 ms: {'met' if us <= 1000 else 'NOT met'})")


if __name__ == "__main__":
    main()
