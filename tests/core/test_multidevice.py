"""A model sharded over 8 (host) devices: sharding text per row, statistics equal numpy on the gathered values."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from flax import nnx
    import nnx_lab
    from nnx_lab.core import compat

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

    class Sharded(nnx.Module):
        def __init__(self, rngs):
            init = nnx.initializers.normal(1.0)
            self.w = nnx.Param(nnx.with_partitioning(init, ("data", "model"))(rngs.params(), (64, 32)))
            self.b = nnx.Param(jnp.arange(32.0))
            self.v = nnx.Param(jnp.linspace(-3, 3, 64))

    with jax.set_mesh(mesh):
        model = Sharded(nnx.Rngs(0))
    compat.set_value(model.w, jax.device_put(compat.get_value(model.w), jax.NamedSharding(mesh, jax.P("data", "model"))))
    compat.set_value(model.v, jax.device_put(compat.get_value(model.v).at[5].set(jnp.nan), jax.NamedSharding(mesh, jax.P("data"))))
    with jax.transfer_guard_device_to_host("disallow"):
        snap = nnx_lab.snapshot(model)
    out = {}
    for row in snap.rows:
        x = np.asarray(jax.device_get(compat.get_value(getattr(model, row.path[0]))), np.float64)
        f = x[np.isfinite(x)]
        out[row.path[0]] = {"sharding": row.sharding, "devices": row.devices, "stats": row.stats,
                            "numpy": [f.mean(), f.std(), f.min(), f.max(), float(np.sqrt((f ** 2).sum())),
                                      int(np.isnan(x).sum())]}
    out["summary"] = snap.device_summary["count"]
    print(json.dumps(out))
""")


def test_sharded_rows_and_stats():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["w"]["sharding"] == "P('data', 'model') @ mesh(data=4, model=2)"
    assert out["v"]["sharding"] == "P('data',) @ mesh(data=4, model=2)"
    assert out["w"]["devices"] == "cpu:0-7"
    assert out["summary"] == 8
    for name in ("w", "b", "v"):
        s, want = out[name]["stats"], out[name]["numpy"]
        got = [s["mean"], s["std"], s["min"], s["max"], s["norm"], s["nan_count"]]
        for g, w in zip(got, want):
            assert abs(g - w) <= 1e-5 * max(1.0, abs(w)), (name, got, want)
    assert out["v"]["stats"]["nan_count"] == 1
