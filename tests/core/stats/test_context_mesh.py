"""A notebook that set a context mesh (``jax.set_mesh``, as flax's miniGPT example does) still gets
every row's statistics: a scalar on one device beside arrays on the mesh, with the kernel cache off
(every kernel through jax.jit on the caller's thread) or on. Before, jax refused each per-array
kernel ("Received incompatible devices for jitted computation ... jit's context mesh with device ids
[0, 1]") and the rows said so, depending on what the disk cache held."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp, numpy as np, optax
    from flax import nnx
    from jax.sharding import NamedSharding, PartitionSpec as P
    import nnx_lab

    mesh = jax.make_mesh((2,), ("batch",))
    _ = jax.set_mesh(mesh)  # the global setter, as in the notebook

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(8, 16, rngs=rngs)
            self.norm = nnx.LayerNorm(16, rngs=rngs)
            self.drop = nnx.Dropout(0.1, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.norm(self.linear(x)))

    model = Block(nnx.Rngs(0, dropout=1))
    # one parameter replicated over the mesh, the rest where they were made
    model.norm.scale.value = jax.device_put(model.norm.scale.value, NamedSharding(mesh, P()))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    out = {}
    for name, obj in (("model", model), ("optimizer", optimizer)):
        snap = nnx_lab.snapshot(obj)
        out[name] = {r.path_text: r.status for r in snap.rows}
        out[name + "_text"] = snap.to_text()
    comparison = nnx_lab.compare(model, model)
    out["compare"] = comparison.to_text()
    viewer = nnx_lab.watch(model, optimizer=optimizer, display=False)
    viewer.log(loss=jnp.float32(1.0), grads=nnx.state(model, nnx.Param))
    viewer.refresh()
    out["viewer"] = {r.path_text: r.status for r in viewer.last_snapshot.rows}
    getter = getattr(jax.sharding, "get_mesh", None)
    out["mesh_kept"] = getter is None or getter().shape == mesh.shape
    print("RESULT " + json.dumps(out))
""")


def _run(cache: str) -> dict:
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
        NNX_LAB_CACHE_DIR=cache,
    )
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


@pytest.mark.parametrize("cache", ["off", "fresh"])
def test_every_row_has_statistics_under_a_context_mesh(cache, tmp_path):
    out = _run("off" if cache == "off" else str(tmp_path / "kernels"))
    for name in ("model", "optimizer", "viewer"):
        bad = {path: status for path, status in out[name].items() if "error" in (status or "")}
        assert not bad, (name, bad)
    assert "opt_state[0].count" in out["optimizer"]
    assert "incompatible devices" not in out["optimizer_text"]
    assert "incompatible devices" not in out["compare"] and "error" not in out["compare"]
    assert out["mesh_kept"]  # the user's mesh is theirs again afterwards
