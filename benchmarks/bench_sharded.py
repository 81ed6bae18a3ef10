"""A model sharded over several devices: what a viewer's first look, its program's compile and a
refresh cost, beside what a user would write by hand (each array's statistics by a jitted jnp
reduction, one array at a time: launched all at once, about 40 such all-reduce programs in flight
deadlock XLA's CPU client).

Runs in a subprocess with ``--xla_force_host_platform_device_count`` host devices (the device count is
fixed when jax starts). nnx_lab reduces each array's shards where they live and combines their numbers
on the host (core/stats/_shards.py): no collective; arrays with one distinct shard per device share
one program over all devices (shard_map), compiled once. Target (issue 24): the program for 1,000
arrays over 8 devices compiles in <= 10 s on a 2-core CPU.

    python benchmarks/bench_sharded.py [--arrays 1000] [--devices 8]

The disk cache is off (NNX_LAB_CACHE_DIR=off): every figure is a first session's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys, time
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from nnx_lab.core.stats import _programs
    from nnx_lab.core.watcher import Watcher

    n, devices = int(sys.argv[1]), jax.device_count()
    mesh = jax.make_mesh((1, devices), ("batch", "model"))
    # a transformer's mix: column- and row-sharded kernels, sharded biases, replicated norms
    kinds = [((256, 512), P(None, "model")), ((512,), P("model")), ((512, 256), P("model", None)), ((256,), P())]
    rng = np.random.default_rng(0)
    arrays = {f"a{i:04d}": jax.device_put(rng.random(kinds[i % 4][0], np.float32), NamedSharding(mesh, kinds[i % 4][1]))
              for i in range(n)}

    by_hand = jax.jit(lambda x: jnp.stack([jnp.mean(x), jnp.std(x), jnp.min(x), jnp.max(x)]))
    start = time.perf_counter()
    for x in arrays.values():  # one at a time (see the module docstring)
        jax.block_until_ready(by_hand(x))
    hand_first = time.perf_counter() - start
    start = time.perf_counter()
    for x in arrays.values():
        jax.block_until_ready(by_hand(x))
    hand_warm = time.perf_counter() - start

    start = time.perf_counter()
    watcher = Watcher(arrays)
    watcher.refresh(force=True)
    first = time.perf_counter() - start
    start = time.perf_counter()
    watcher.engine.last_attempt = float("-inf")
    watcher.refresh(force=True)
    while _programs.compiling():
        time.sleep(0.01)
    compile_s = time.perf_counter() - start
    warm = []
    for _ in range(5):
        start = time.perf_counter()
        watcher.refresh(force=True)
        warm.append(time.perf_counter() - start)
    warm = sorted(warm)[2]
    assert watcher.state == "live", watcher.message
    print(f"{n} arrays over {devices} devices ({n * 3 // 4} sharded):")
    print(f"  by hand (jitted mean/std/min/max per array): first {hand_first:.2f} s, again {hand_warm * 1e3:.0f} ms")
    print(f"  nnx_lab viewer: first refresh {first:.2f} s ({hand_first / first:.2f}x by hand's first), "
          f"programs compiled in {compile_s:.2f} s ({_programs.programs_compiled()} programs; target <= 10 s: "
          f"{'met' if compile_s <= 10 else 'NOT met'}), refresh {warm * 1e3:.0f} ms ({hand_warm / warm:.2f}x by hand's)")
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", type=int, default=1000)
    parser.add_argument("--devices", type=int, default=8)
    args = parser.parse_args()
    env = dict(
        os.environ,
        XLA_FLAGS=f"--xla_force_host_platform_device_count={args.devices}",
        JAX_PLATFORMS="cpu",
        NNX_LAB_CACHE_DIR="off",
    )
    subprocess.run([sys.executable, "-c", SCRIPT, str(args.arrays)], env=env, check=True)


if __name__ == "__main__":
    main()
