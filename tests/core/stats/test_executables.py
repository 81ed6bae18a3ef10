"""The statistics kernels' executables kept on disk: a later session loads instead of compiling,
with the same numbers; a damaged file is replaced; the cache can be turned off."""

import json
import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np

from nnx_lab.core.stats import _executables, compute_stats
from nnx_lab.core.stats._kernels import float_kernel

SESSION = r"""
import json, sys
import jax.numpy as jnp
from nnx_lab.core.stats import compute_stats, _executables
from nnx_lab.core.stats._kernels import KERNELS
x = jnp.arange(12.0).reshape(3, 4) / 7
y = jnp.arange(5, dtype=jnp.int32)
stats = compute_stats([x, y])
print("RESULT" + json.dumps({"stats": stats, "jit_compiles": sum(k._cache_size() for k in KERNELS),
                             "executables": _executables.executables_count()}))
"""


def session(cache, code=SESSION):
    """Run ``code`` in a fresh Python process with its disk cache in ``cache``; what it printed after RESULT."""
    env = dict(os.environ, NNX_LAB_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT") :])


def test_a_later_session_loads_the_kernels_and_gets_the_same_numbers(tmp_path):
    first = session(tmp_path)
    kept = sorted(p.name for p in tmp_path.glob("kernel-*.xla"))
    assert len(kept) == 2  # one float kernel, one integer kernel
    second = session(tmp_path)
    assert second["executables"] == 2 and second["jit_compiles"] == 0  # loaded, nothing compiled
    assert second["stats"] == first["stats"]
    assert sorted(p.name for p in tmp_path.glob("kernel-*.xla")) == kept
    x = np.arange(12.0).reshape(3, 4) / 7
    assert np.isclose(second["stats"][0]["std"], x.std(), rtol=1e-6)
    assert second["stats"][1]["max"] == 4


def test_another_cpu_compiles_its_own_kernels(tmp_path):
    # A home directory shared by machines of different CPUs: XLA:CPU's code is made for the CPU that
    # compiled it, so one machine's entries must not be loaded on another.
    session(tmp_path)
    kept = sorted(p.name for p in tmp_path.glob("kernel-*.xla"))
    other = session(
        tmp_path,
        "from nnx_lab.core.stats import _executables\n_executables.cpu_features = lambda: 'another CPU'\n" + SESSION,
    )
    assert other["executables"] == 2
    now = sorted(p.name for p in tmp_path.glob("kernel-*.xla"))
    assert len(now) == 2 * len(kept) and set(kept) < set(now)  # compiled and kept apart, not loaded


def test_a_damaged_file_is_compiled_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv("NNX_LAB_CACHE_DIR", str(tmp_path))
    x = jnp.linspace(-1.0, 2.0, 37)
    spec = ("test-damaged", x.shape, x.dtype)
    monkeypatch.setattr(_executables, "_loaded", {})
    assert _executables.prepare_executable(float_kernel, 0, x, spec)
    [path] = tmp_path.glob("kernel-*.xla")
    path.write_bytes(b"not an executable")
    monkeypatch.setattr(_executables, "_loaded", {})
    assert _executables.prepare_executable(float_kernel, 0, x, spec)  # removed, compiled, written again
    floats, _ = _executables.loaded_executable(spec)(x)
    assert np.isclose(float(floats[0]) * 1, float(float_kernel(x)[0][0]))
    assert path.read_bytes() != b"not an executable"


def test_turned_off_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("NNX_LAB_CACHE_DIR", "off")
    assert _executables.cache_dir() is None
    x = jnp.ones(3)
    assert not _executables.prepare_executable(float_kernel, 0, x, ("test-off", x.shape))
    [s] = compute_stats([jnp.ones(41)])
    assert np.isclose(s["mean"], 1.0)
    assert not list(tmp_path.iterdir())


# Counts nnx_lab's compiles through the disk cache (loading an executable is not one).
COUNT_COMPILES = r"""
from nnx_lab.core.stats import _executables
compiles = []
real = _executables.compile_lowered
_executables.compile_lowered = lambda lowered, options: compiles.append(1) or real(lowered, options)
"""

PROGRAM_SESSION = (
    COUNT_COMPILES
    + r"""
import json, time
import jax.numpy as jnp
from flax import nnx
from nnx_lab.core.watcher import Watcher
from nnx_lab.core.stats import _programs

class Net(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(6, 5, rngs=nnx.Rngs(0))
        self.norm = nnx.LayerNorm(5, rngs=nnx.Rngs(0))
        self.count = nnx.Variable(jnp.arange(4, dtype=jnp.int32))

model = Net()
w = Watcher(model, max_rate=100.0)
w.refresh(force=True, wait=True)
deadline = time.time() + 120
while (_programs.programs_compiled() == 0 or _programs.compiling()) and time.time() < deadline:
    time.sleep(0.05)
before = len(compiles)
w.refresh(force=True, wait=True)
print("RESULT" + json.dumps({"programs": _programs.programs_compiled(), "compiles_before": before,
                             "stats": w.snapshot.stat_matrix.tolist()}))
"""
)


def test_a_later_session_loads_a_viewers_program_instead_of_compiling_it(tmp_path):
    first = session(tmp_path, PROGRAM_SESSION)
    assert first["programs"] == 1 and first["compiles_before"] >= 1  # compiled (the kernels too)
    assert len(list(tmp_path.glob("program-*.xla"))) == 1
    second = session(tmp_path, PROGRAM_SESSION)
    assert second["programs"] == 1 and second["compiles_before"] == 0  # kernels and program loaded
    np.testing.assert_array_equal(np.asarray(second["stats"], float), np.asarray(first["stats"], float))


UPDATE_SESSION = (
    COUNT_COMPILES
    + r"""
import json, time
import jax, jax.numpy as jnp
from flax import nnx
from nnx_lab.core import compat
from nnx_lab.core.stats import STAT_NAMES, _programs
from nnx_lab.core.training import UPDATE
from nnx_lab.core.watcher import Watcher

class Holder(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.arange(12.0).reshape(3, 4) / 10)
        self.b = nnx.Param(jnp.ones(4))

model = Holder()
shrink = jax.jit(lambda x: x * 0.99)
now = [1000.0]  # the Watcher's clock, moved on before each tick so that every tick refreshes
w = Watcher(model, max_rate=100.0, clock=lambda: now[0])
w.refresh(force=True, wait=True)
got = None
for _ in range(400):
    for name in ("w", "b"):
        var = getattr(model, name)
        compat.set_value(var, shrink(compat.get_value(var)))
    now[0] += 1e6
    w.tick()
    w.wait()
    series = w.snapshot.series
    if series is not None and UPDATE in series.matrices and not series.stale:
        got = series.ratio(UPDATE, w.snapshot.stat_matrix[:, STAT_NAMES.index("norm")]).tolist()
        break
    time.sleep(0.01)
deadline = time.time() + 120  # the viewer's own program too, so that the next session compiles nothing
while (_programs.programs_compiled() == 0 or _programs.compiling()) and time.time() < deadline:
    time.sleep(0.05)
print("RESULT" + json.dumps({"compiles": len(compiles), "update": got}))
"""
)


def test_a_later_session_loads_the_update_ratios_program_too(tmp_path):
    first = session(tmp_path, UPDATE_SESSION)
    assert first["update"] is not None and first["compiles"] >= 2  # kernels, the viewer's and the update's programs
    assert len(list(tmp_path.glob("program-*.xla"))) == 2
    second = session(tmp_path, UPDATE_SESSION)
    assert second["update"] is not None and second["compiles"] == 0  # every executable loaded from disk
    # ‖θₜ − θₜ₋₁‖ / ‖θₜ₋₁‖ of θ ← 0.99·θ, whichever step it came from
    np.testing.assert_allclose(first["update"], 0.01, rtol=1e-4)
    np.testing.assert_allclose(second["update"], 0.01, rtol=1e-4)


LAYERED_SESSION = r"""
import json
import jax
from flax import nnx
import nnx_lab
compiles = []  # every XLA compile of the process (jit's included), counted from the snapshot on
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: compiles.append(event) if event == "/jax/core/compile/backend_compile_duration" else None)

class Block(nnx.Module):
    def __init__(self, rngs):
        self.norm = nnx.LayerNorm(8, rngs=rngs)
        self.up = nnx.Linear(8, 16, rngs=rngs)

model = nnx.vmap(lambda key: Block(nnx.Rngs(key)), in_axes=0, out_axes=0)(jax.random.split(jax.random.key(0), 3))
compiles.clear()
snap = nnx_lab.snapshot(model, layers={"": 0})
print("RESULT" + json.dumps({"compiles": len(compiles), "rows": [r.path_text for r in snap.rows],
                             "stats": snap.stat_matrix.tolist()}))
"""


def test_a_later_session_loads_the_kernels_mapped_over_a_layer_axis(tmp_path):
    first = session(tmp_path, LAYERED_SESSION)
    assert first["compiles"] >= 1 and "up.kernel[layer 2]" in first["rows"]  # one row per layer
    second = session(tmp_path, LAYERED_SESSION)
    assert second["compiles"] == 0 and second["rows"] == first["rows"]  # nothing compiled, layers included
    np.testing.assert_array_equal(np.asarray(second["stats"], float), np.asarray(first["stats"], float))
