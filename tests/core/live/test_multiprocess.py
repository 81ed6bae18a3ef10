"""A model sharded over two processes (jax.distributed on 127.0.0.1, CPU devices, gloo collectives),
each holding half of every array, as on a TPU pod slice or a multi-host GPU group: the arrays are
not fully addressable, the SPMD partitioner reduces them and only the small replicated result is
read. Every process gets the same statistics, equal to numpy's; only process 0 displays."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

WORKER = textwrap.dedent("""
    import json, os, sys
    pid, port = int(sys.argv[1]), sys.argv[2]
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=pid)
    import jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from flax import nnx
    import IPython.display
    import nnx_lab
    from IPython.testing.globalipapp import start_ipython

    shown = []
    IPython.display.display = lambda *a, **k: shown.append(a)
    ip = start_ipython()

    mesh = jax.make_mesh((4,), ("data",))
    full = (np.random.default_rng(0).normal(size=(16, 6)) * 1e-20).astype(np.float32)  # Adam's nu scale
    full[3, 1] = np.nan
    w = jax.make_array_from_callback(full.shape, NamedSharding(mesh, P("data", None)), lambda i: full[i])

    class Holder(nnx.Module):
        def __init__(self, w):
            self.w = nnx.Param(w)

    model = Holder(w)
    with jax.transfer_guard_device_to_host("disallow"):
        row = nnx_lab.snapshot(model)["w"]
    viewer = nnx_lab.watch(model)
    viewer._watcher.engine.lockstep_every = 3
    for step in viewer.track(range(10)):
        model.w.value = model.w.value * 1.0  # a new array each step, as training makes
    f = full[np.isfinite(full)].astype(np.float64)
    print("RESULT " + json.dumps({
        "fully_addressable": w.is_fully_addressable, "status": row.status, "stats": row.stats,
        "devices": row.devices, "numpy": [f.mean(), f.std(), f.min(), f.max(), float(np.sqrt((f ** 2).sum()))],
        "viewer": viewer.status["state"], "refreshes": viewer.status["refreshes"], "shown": len(shown)}))
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_processes():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(i), port],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    # (IPython 7 writes a terminal title escape to stdout first: the line is found by its marker.)
    return [json.loads(out.rsplit("RESULT ", 1)[1]) for out, _ in outs]


def test_every_process_gets_the_same_correct_statistics(two_processes):
    first, second = two_processes
    assert first["fully_addressable"] is False and first["devices"] == second["devices"]
    assert first["stats"] == second["stats"] and first["status"] == "ok"
    s = first["stats"]
    for got, want in zip([s["mean"], s["std"], s["min"], s["max"], s["norm"]], first["numpy"]):
        assert got == pytest.approx(want, rel=1e-5)
    assert s["nan_count"] == 1


def test_viewers_refresh_together_and_only_process_0_displays(two_processes):
    first, second = two_processes
    # The first refresh, then every 3rd of 10 ticks, then the loop's end: the same in both.
    assert first["viewer"] == second["viewer"] == "live"
    assert first["refreshes"] == second["refreshes"] == 5
    assert (first["shown"], second["shown"]) == (1, 0)
