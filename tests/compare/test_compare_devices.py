"""compare() across devices: one program per device group, sharding mismatches, sharded values
against numpy (8 forced host devices, in a subprocess: XLA_FLAGS must be set before jax starts)."""

import os
import subprocess
import sys

SCRIPT = r"""
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from flax import nnx
import nnx_lab
from nnx_lab.core.compare import _values

devices = jax.devices()
assert len(devices) == 8
mesh = Mesh(np.array(devices[:4]).reshape(2, 2), ("data", "model"))
x = jax.random.normal(jax.random.key(0), (64, 32))
y = x.at[0, 0].add(1.0)
a = {"w": nnx.Param(jax.device_put(x, NamedSharding(mesh, P("data", "model")))),
     "v": nnx.Param(jax.device_put(x, devices[5]))}
b = {"w": nnx.Param(jax.device_put(y, NamedSharding(mesh, P("model", None)))),
     "v": nnx.Param(jax.device_put(y, devices[6]))}
before = _values._program._cache_size()
cmp = nnx_lab.compare(a, b)
groups = _values._program._cache_size() - before
w, v = cmp["w"], cmp["v"]
xn, yn = np.asarray(x), np.asarray(y)
rel = np.linalg.norm(yn - xn) / np.linalg.norm(xn)
assert abs(w.rel_change - rel) < 1e-5 * rel and abs(v.rel_change - rel) < 1e-5 * rel, (w, v, rel)
assert w.frac_changed == v.frac_changed == 1 / x.size
first, second = w.mismatch.split(" vs ")  # PartitionSpec's repr differs between jax versions
assert first.startswith("sharding ") and "('data', 'model')" in first and "'model', None" in second, w.mismatch
assert v.mismatch is None  # one device each: where they live is no mismatch
assert "1 sharding mismatch" in cmp.verdict
print("groups", groups, cmp.verdict)
"""


def test_sharded_and_placed_arrays():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("groups 2 ")  # the mesh's 4 devices, and device 5 (b's v follows a's)
