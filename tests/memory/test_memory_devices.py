"""The ledger on 2 and 8 forced host devices: a sharded model counted per device by its addressable shards,
a replicated array on both, and each device's total equal to its live buffers' bytes exactly."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import gc, json
    import jax, jax.numpy as jnp, numpy as np
    from flax import nnx
    import nnx_lab
    from nnx_lab.core import compat

    assert len(jax.devices()) in (2, 8), jax.devices()
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("model",))
    sharded = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, "model"))
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())

    model = nnx.Linear(64, 32, rngs=nnx.Rngs(0))
    compat.set_value(model.kernel, jax.device_put(compat.get_value(model.kernel), sharded))  # 64x(32/N) per device
    compat.set_value(model.bias, jax.device_put(compat.get_value(model.bias), replicated))  # 32 on each
    batch = jax.device_put(jnp.ones((8, 64)), jax.devices()[1])
    step = jax.jit(lambda m, x: m @ x.T)  # something compiled, as in a notebook

    gc.collect()
    gc.disable()
    ledger = nnx_lab.memory(namespace={"model": model, "batch": batch})
    seen, live = set(), {}
    for a in jax.live_arrays():
        for s in a.addressable_shards:
            key = (s.device.id, s.data.unsafe_buffer_pointer())
            if key not in seen:
                seen.add(key)
                live[f"cpu:{s.device.id}"] = live.get(f"cpu:{s.device.id}", 0) + s.data.nbytes
    rows = {f"{r.holder}/{r.group}/{r.device}": r.bytes for r in ledger.rows if r.holder != "(unreached)"}
    gc.enable()
    plan = nnx_lab.memory(lambda m, x: m(x), model, jax.ShapeDtypeStruct((8, 64), jnp.float32))
    print(json.dumps({"plan": [plan.device, plan.analysis], "rows": rows, "totals": {d.device: d.ledger_bytes for d in ledger.devices}, "live": live,
                      "text": ledger.select(device=1).to_text()}))
""")


@pytest.mark.parametrize("n", [2, 8])
def test_a_sharded_model_on_several_devices(n):
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n}", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["totals"] == out["live"] and set(out["totals"]) == {f"cpu:{d}" for d in range(n)}
    rows = out["rows"]
    # the kernel's 64x32 float32 split in n column blocks of 64x(32/n); the bias replicated: 32 floats on each
    for d in range(n):
        assert rows[f"model/Param/cpu:{d}"] == 64 * (32 // n) * 4 + 32 * 4
    assert rows["batch/array/cpu:1"] == 8 * 64 * 4 and "batch/array/cpu:0" not in rows
    assert "cpu:1" in out["text"] and "cpu:0:" not in out["text"]
    device, analysis = out["plan"]  # a step over the sharded model: XLA's analysis of one device's program
    assert device == "cpu:0" and analysis["argument"] >= 64 * (32 // n) * 4 + 32 * 4 + 8 * 64 * 4
