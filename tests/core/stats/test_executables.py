"""The statistics kernels' executables kept on disk: a later session loads instead of compiling,
with the same numbers; a damaged file is replaced; the cache can be turned off.

Trust: the kernel cache trusts only what this user's cache wrote (issue 25 §1): a planted or tampered
entry is never loaded, a directory others may write is refused (said once), what it creates is
0700/0600, and it never deletes a file it did not write.

Reaches inside ``nnx_lab.core.stats`` (why this file may): what the disk cache keeps, loads, refuses
and creates is only seen in its directory and its counters, so its entries are planted, damaged
and counted where the cache makes them.
"""

import json
import logging
import os
import pickle
import stat
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from nnx_lab.core.stats import _cache_store, _executables, compute_stats
from nnx_lab.core.stats._kernels import float_kernel, int_kernel

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


# -- trust: only what this user's cache wrote is loaded


class Planted:
    """A pickle that writes ``marker`` when loaded: what an attacker would put in the cache."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


def entries(cache):
    """The files the cache keeps its executables in (whatever their names), not its key or manifest."""
    return [p for p in cache.iterdir() if p.is_file() and not p.name.startswith(("nnx_lab-cache", "."))]


def kernel_entry(cache, x):
    """The entry the float kernel of ``x`` is kept in (by name: a background compile left running by an
    earlier test, a viewer's update ratio, may write a program of its own into the same directory)."""
    entry = cache / f"kernel-{_executables._key(0, x)}.xla"
    assert entry in entries(cache)
    return entry


def fresh(monkeypatch, cache):
    """This process's cache in ``cache``, with nothing loaded yet; the compiles through it counted."""
    monkeypatch.setenv("NNX_LAB_CACHE_DIR", str(cache))
    monkeypatch.setattr(_executables, "_loaded", {})
    compiles = []
    real = _executables.compile_lowered
    monkeypatch.setattr(
        _executables, "compile_lowered", lambda lowered, options: compiles.append(1) or real(lowered, options)
    )
    return compiles


def run_kernel(x, spec):
    """The float kernel's statistics of ``x`` through the cache (its mean and max)."""
    assert _executables.prepare_executable(float_kernel, 0, x, spec)
    floats, counts = _executables.loaded_executable(spec)(x)
    return float(floats[0]) * 2.0 ** int(counts[3]), float(floats[3])


def test_a_planted_pickle_is_never_run_and_the_statistics_stay_right(tmp_path, monkeypatch):
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    x = jnp.linspace(-1.0, 3.0, 53)
    spec = ("test-planted", x.shape, x.dtype)
    fresh(monkeypatch, cache)
    run_kernel(x, spec)
    entry = kernel_entry(cache, x)
    entry.write_bytes(pickle.dumps(Planted(marker)))  # at the exact entry name, listed in the manifest
    compiles = fresh(monkeypatch, cache)
    mean, mx = run_kernel(x, spec)
    assert not marker.exists()
    assert np.isclose(mean, 1.0, rtol=1e-6) and mx == 3.0
    assert compiles == [1]  # ignored and compiled afresh ...
    compiles = fresh(monkeypatch, cache)
    assert run_kernel(x, spec) == (mean, mx) and compiles == []  # ... and the rewritten entry loads
    assert not marker.exists()


def test_a_file_planted_before_the_cache_wrote_there_is_neither_run_nor_deleted(tmp_path, monkeypatch):
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    x = jnp.linspace(0.0, 2.0, 61)
    spec = ("test-planted-unlisted", x.shape, x.dtype)
    fresh(monkeypatch, tmp_path / "scratch")  # anyone can compute an entry's name: here, by writing it once
    run_kernel(x, spec)
    scratch = kernel_entry(tmp_path / "scratch", x)
    cache.mkdir(mode=0o700)
    planted = cache / scratch.name
    planted.write_bytes(pickle.dumps(Planted(marker)))
    fresh(monkeypatch, cache)
    mean, mx = run_kernel(x, spec)
    assert not marker.exists() and np.isclose(mean, 1.0, rtol=1e-6) and mx == 2.0
    assert planted.read_bytes() == pickle.dumps(Planted(marker))  # not the cache's: left alone


def test_a_later_session_runs_no_planted_entry_and_then_loads_its_own_again(tmp_path):
    marker, cache = tmp_path / "ran", tmp_path / "cache"
    first = session(cache, PROGRAM_SESSION)  # the kernels and a viewer's program
    planted = entries(cache)
    assert len(planted) >= 3
    for p in planted:
        p.write_bytes(pickle.dumps(Planted(marker)))
    second = session(cache, PROGRAM_SESSION)  # a new process's watch()
    assert not marker.exists()
    assert second["programs"] == 1 and second["compiles_before"] >= 1  # ignored, compiled afresh
    np.testing.assert_array_equal(np.asarray(second["stats"], float), np.asarray(first["stats"], float))
    third = session(cache, PROGRAM_SESSION)
    assert third["compiles_before"] == 0  # the rewritten entries load
    assert not marker.exists()


def test_a_tampered_entry_is_ignored_and_compiled_afresh(tmp_path):
    cache = tmp_path / "cache"
    code = COUNT_COMPILES + SESSION.replace('"executables"', '"compiles": len(compiles), "executables"')
    first = session(cache, code)
    assert first["compiles"] == 2
    for p in entries(cache):  # one bit flipped inside the executable's bytes
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0x01
        p.write_bytes(bytes(data))
    second = session(cache, code)  # a separate process: loading a damaged executable must not even be tried
    assert second["compiles"] == 2 and second["stats"] == first["stats"]
    third = session(cache, code)
    assert third["compiles"] == 0 and third["stats"] == first["stats"]


def refused(tmp_path, monkeypatch, caplog, cache, marker):
    """Two snapshots with the cache in ``cache``: right statistics, one warning, nothing loaded or written."""
    before = sorted(p.name for p in cache.iterdir())
    fresh(monkeypatch, cache)
    with caplog.at_level(logging.WARNING, logger="nnx_lab"):
        for n in (71, 72):
            x = jnp.linspace(0.0, 1.0, n)
            assert not _executables.prepare_executable(float_kernel, 0, x, ("test-refused", n))
            [s] = compute_stats([jnp.linspace(0.0, 4.0, n + 100)])
            assert np.isclose(s["mean"], 2.0) and s["max"] == 4.0
    said = [r.getMessage() for r in caplog.records if r.name == "nnx_lab" and str(cache) in r.getMessage()]
    assert len(said) == 1 and "NNX_LAB_CACHE_DIR" in said[0], said
    assert sorted(p.name for p in cache.iterdir()) == before  # nothing written there
    assert not marker.exists()
    return said[0]


def plant_everywhere(cache, marker):
    for n in (71, 72):
        x = jnp.linspace(0.0, 1.0, n)
        (cache / f"kernel-{_executables._key(0, x)}.xla").write_bytes(pickle.dumps(Planted(marker)))


def test_a_directory_owned_by_another_user_is_refused(tmp_path, monkeypatch, caplog):
    cache, marker = tmp_path / "theirs", tmp_path / "ran"
    cache.mkdir(mode=0o700)
    plant_everywhere(cache, marker)
    if os.geteuid() == 0:  # tests run as root: really theirs (nobody's)
        for p in [cache, *cache.iterdir()]:
            os.chown(p, 65534, 65534)
    else:
        monkeypatch.setattr(os, "geteuid", lambda real=os.geteuid(): real + 1)
    assert "another user" in refused(tmp_path, monkeypatch, caplog, cache, marker)


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o703])
def test_a_directory_others_may_write_is_refused(tmp_path, monkeypatch, caplog, mode):
    cache, marker = tmp_path / "shared", tmp_path / "ran"
    cache.mkdir()
    plant_everywhere(cache, marker)
    os.chmod(cache, mode)
    assert "writable by" in refused(tmp_path, monkeypatch, caplog, cache, marker)


def test_a_key_others_may_read_is_refused(tmp_path, monkeypatch, caplog):
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    cache.mkdir(mode=0o700)
    (cache / _cache_store.KEY_FILE).write_bytes(os.urandom(32))
    os.chmod(cache / _cache_store.KEY_FILE, 0o644)
    assert "key" in refused(tmp_path, monkeypatch, caplog, cache, marker)


def test_what_the_cache_creates_only_its_user_can_read(tmp_path, monkeypatch):
    old = os.umask(0)  # the most permissive umask: the modes must come from the cache itself
    try:
        cache = tmp_path / "a" / "b"
        fresh(monkeypatch, cache)
        x = jnp.linspace(0.0, 1.0, 83)
        run_kernel(x, ("test-modes", 83))
        y = jnp.arange(7, dtype=jnp.int32)
        assert _executables.prepare_executable(int_kernel, 4, y, ("test-modes-int", 7))
    finally:
        os.umask(old)
    for d in (tmp_path / "a", cache):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    files = list(cache.iterdir())
    assert len(files) == 4  # two entries, the key, the manifest
    for f in files:
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f


def test_a_users_files_in_the_cache_directory_are_never_deleted(tmp_path, monkeypatch):
    cache = tmp_path / "checkpoints"  # NNX_LAB_CACHE_DIR pointed at a folder of the user's own files
    cache.mkdir(mode=0o700)
    for i in range(600):
        p = cache / f"checkpoint_{i:03d}.bin"
        p.write_bytes(b"weights %d" % i)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # older than anything the cache writes
    lookalike = cache / ("program-" + "0" * 32 + ".xla")  # the cache's pattern, but not its file
    lookalike.write_bytes(b"mine")
    os.utime(lookalike, (1_000_000, 1_000_000))
    fresh(monkeypatch, cache)
    run_kernel(jnp.linspace(0.0, 1.0, 91), ("test-user-files", 91))
    monkeypatch.setattr(_cache_store, "MAX_FILES", 2)  # the cache's own pruning still works
    for n in (92, 93, 94):
        run_kernel(jnp.linspace(0.0, 1.0, n), ("test-user-files", n))
    for i in range(600):
        assert (cache / f"checkpoint_{i:03d}.bin").read_bytes() == b"weights %d" % i
    assert lookalike.read_bytes() == b"mine"
    assert len(list(cache.glob("kernel-*.xla"))) == 2


def test_an_entry_under_another_entrys_name_is_refused(tmp_path):
    store = _cache_store.open_store(tmp_path / "cache")
    a, b = "kernel-" + "a" * 32 + ".xla", "kernel-" + "b" * 32 + ".xla"
    assert store.write(a, b"executable a") and store.write(b, b"executable b")
    assert store.read(a) == b"executable a"
    (tmp_path / "cache" / b).write_bytes((tmp_path / "cache" / a).read_bytes())  # a valid entry, moved
    assert store.read(b) is None
    with pytest.raises(ValueError):
        store.write("checkpoint.bin", b"x")  # only its own names


def test_a_failing_cache_never_breaks_a_snapshot(tmp_path, monkeypatch, caplog):
    fresh(monkeypatch, tmp_path / "cache")

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    for where, name in ((_executables, "open_store"), (_cache_store.Store, "read"), (_cache_store.Store, "write")):
        with monkeypatch.context() as m:
            m.setattr(where, name, broken)
            monkeypatch.setattr(_executables, "_loaded", {})
            with caplog.at_level(logging.DEBUG, logger="nnx_lab"):
                x = jnp.linspace(0.0, 1.0, 101)
                _executables.prepare_executable(float_kernel, 0, x, ("test-broken", name))
                [s] = compute_stats([jnp.linspace(0.0, 4.0, 101 + len(name))])
            assert np.isclose(s["mean"], 2.0)
            assert any(
                "disk on fire" in (r.exc_text or "") or (r.exc_info and "disk on fire" in str(r.exc_info[1]))
                for r in caplog.records
            ), name
            caplog.clear()
