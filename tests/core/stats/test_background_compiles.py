"""The stats engine's compiles off the user's path: grouped kernels and background compiles.

Grouped kernels (many small arrays of one spec in one launch): a later session's first look loads
them from the disk cache and gets exactly the numbers of one kernel per array; their entries are
authenticated like every other entry; nothing is compiled with the cache off; a look has its numbers
before its grouped kernels compile.

Background compiles (a viewer's program, the update ratio's) wait while another thread (the user's
cell) is inside XLA's compile, and start once it is done; compiles made for the user's own call (a
first snapshot) never wait; the wait is bounded; what is compiled works.

Reaches inside ``nnx_lab.core.stats`` (why this file may): which launches ran, and which entries the
disk cache holds, are only seen in its counters and its directory; and when a background compile
starts against a user's compile is timing inside XLA's compile frames, so the tests stand in for
jax's frame and compile through ``_compiling`` directly.
"""

import json
import os
import subprocess
import sys
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnx_lab.core.stats import PendingStats, _cache_store, _compiling, _executables, compiling, compute_stats
from nnx_lab.core.stats._compiling import compile_lowered, in_background, others_compiling
from nnx_lab.core.stats._kernels import KERNELS, float_kernel

SESSION = r"""
import json, time
import numpy as np, jax.numpy as jnp
from nnx_lab.core.stats import compiling, compute_stats, _executables
from nnx_lab.core.stats._grouped import grouped_launches
from nnx_lab.core.stats._kernels import KERNELS
rng = np.random.default_rng(0)
# 290 float32 arrays of 1,000 elements (one launch of 256, two of 16, two left), 40 bfloat16 of 3x5,
# 20 int32 and 5 complex64 (too few to group); NaN and Inf inside groups: their masked kernels follow.
arrays = [jnp.asarray(rng.standard_normal(1000) * 3 + 1, jnp.float32) for _ in range(290)]
arrays += [jnp.asarray(rng.standard_normal((3, 5)) * 1e-3, jnp.bfloat16) for _ in range(40)]
arrays += [jnp.asarray(rng.integers(-50, 50, 7), jnp.int32) for _ in range(20)]
arrays += [jnp.asarray(rng.standard_normal(4) + 1j, jnp.complex64) for _ in range(5)]
arrays[5] = arrays[5].at[3].set(jnp.nan)
arrays[260] = arrays[260].at[7].set(jnp.inf)
arrays[300] = arrays[300].at[1, 2].set(-jnp.inf)
stats = compute_stats(arrays)
launches = grouped_launches()
while compiling():  # grouped kernels this look did not find on disk: compiled on a thread, kept there
    time.sleep(0.05)
print("RESULT" + json.dumps({"stats": stats, "launches": launches, "grouped": _executables.grouped_count(),
                             "jit_compiles": sum(k._cache_size() for k in KERNELS)}))
"""


def session(cache):
    env = dict(os.environ, NNX_LAB_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SESSION], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT") :])


def grouped_entry(kernel, shape, dtype, k):
    """The file name of a grouped executable's entry, as the cache names it."""
    spec = jax.ShapeDtypeStruct(shape, dtype, sharding=jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0]))
    return f"kernel-{_executables._key(('grouped', KERNELS.index(kernel), k), spec)}.xla"


def same(a, b):
    """The same statistics, bit for bit (NaN equal to NaN)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.keys() == y.keys()
            for name in x:
                assert x[name] == y[name] or (x[name] != x[name] and y[name] != y[name]), (name, x, y)


def test_a_later_session_launches_grouped_kernels_with_the_same_numbers(tmp_path):
    first = session(tmp_path)  # one kernel per array; the grouped kernels compiled after it, kept on disk
    assert first["launches"] == 0
    assert first["grouped"] == 4  # float32 by 256 and 16, bfloat16 and int32 by 16
    assert (tmp_path / grouped_entry(float_kernel, (1000,), jnp.float32, 256)).exists()
    second = session(tmp_path)
    # float32: one launch of 256 and two of 16; bfloat16: two of 16; int32: one: loaded, nothing compiled
    assert second["launches"] == 6 and second["grouped"] == 4 and second["jit_compiles"] == 0
    same(second["stats"], first["stats"])
    s = second["stats"]
    assert s[5]["nan_count"] == 1 and s[260]["inf_count"] == 1 and s[300]["inf_count"] == 1
    x = np.random.default_rng(0).standard_normal(1000) * 3 + 1
    assert np.isclose(s[0]["mean"], x.astype(np.float32).mean(), rtol=1e-6)


def test_a_tampered_grouped_entry_is_never_loaded_and_is_replaced(tmp_path):
    session(tmp_path)
    path = tmp_path / grouped_entry(float_kernel, (1000,), jnp.float32, 256)
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # inside jax's serialized executable: native code no one may run
    path.write_bytes(bytes(data))
    again = session(tmp_path)
    assert again["launches"] == 18 + 2 + 1  # the tampered one refused: the 290 float32 arrays went by 16
    assert again["grouped"] == 4  # compiled afresh and kept
    name = path.name
    store = _cache_store.open_store(tmp_path)
    assert store is not None and store.read(name) is not None and path.read_bytes() != bytes(data)


def test_nothing_is_grouped_or_compiled_with_the_cache_off(monkeypatch):
    monkeypatch.setenv("NNX_LAB_CACHE_DIR", "off")
    before = _executables.grouped_count()
    arrays = [jnp.full((11,), float(i)) for i in range(40)]
    stats = compute_stats(arrays)
    assert not compiling() and _executables.grouped_count() == before
    assert [s["mean"] for s in stats] == pytest.approx(list(range(40)))


def test_a_look_has_its_numbers_before_its_grouped_kernels_compile(tmp_path, monkeypatch):
    # Compiling a grouped kernel starts by tracing it in Python (the GIL held): started at once, it
    # slowed the first look that wanted it (+250 ms at 1,000 Variables); it waits for that look's numbers.
    monkeypatch.setenv("NNX_LAB_CACHE_DIR", str(tmp_path))
    before = _executables.grouped_count()
    arrays = [jnp.asarray(np.full((13, 3), i, np.float32)) for i in range(16)]  # a spec no other test groups
    pending = PendingStats(arrays)
    time.sleep(2.0)
    assert compiling() and _executables.grouped_count() == before  # wanted, waiting for the look
    stats = pending.result()
    deadline = time.monotonic() + 120
    while compiling() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _executables.grouped_count() == before + 1
    assert grouped_entry(float_kernel, (13, 3), jnp.float32, 16) in os.listdir(tmp_path)
    assert [s["mean"] for s in stats] == list(range(16))


# Background compiles wait for the user's compile


class Recording:
    """A lowered computation whose compile records when it ran."""

    def __init__(self, lowered):
        self.lowered, self.at = lowered, []

    def compile(self, **kwargs):
        self.at.append(time.monotonic())
        return self.lowered.compile(**kwargs)


def lowered():
    return jax.jit(lambda x: x * 2).lower(jnp.ones(3))


def backend_compile_and_load(started: threading.Event, release: threading.Event):
    """Stands for jax's own frame of that name: a thread inside it is "compiling"."""
    started.set()
    release.wait(30)


def test_a_background_compile_waits_for_the_users_compile():
    started, release = threading.Event(), threading.Event()
    user = threading.Thread(target=backend_compile_and_load, args=(started, release), name="user-cell")
    user.start()
    started.wait(10)
    assert others_compiling()
    rec, done = Recording(lowered()), []

    def ours():
        with in_background():
            done.append(compile_lowered(rec, ({},)))

    t = threading.Thread(target=ours, name="nnx_lab-program")
    t.start()
    time.sleep(0.3)
    assert rec.at == []  # still waiting: the user's compile is running
    ended = time.monotonic()
    release.set()
    user.join()
    t.join(60)
    assert rec.at and rec.at[0] >= ended
    np.testing.assert_array_equal(done[0](jnp.ones(3)), [2, 2, 2])
    assert not others_compiling()


def test_the_users_own_compiles_never_wait(monkeypatch):
    started, release = threading.Event(), threading.Event()
    other = threading.Thread(target=backend_compile_and_load, args=(started, release))
    other.start()
    started.wait(10)
    try:
        rec = Recording(lowered())
        compile_lowered(rec, ({},))  # not in_background: the caller waits for this compile
        assert len(rec.at) == 1
    finally:
        release.set()
        other.join()


def test_the_wait_is_bounded(monkeypatch):
    monkeypatch.setattr(_compiling, "YIELD_MAX_S", 0.2)
    started, release = threading.Event(), threading.Event()
    other = threading.Thread(target=backend_compile_and_load, args=(started, release))
    other.start()
    started.wait(10)
    try:
        rec = Recording(lowered())
        start = time.monotonic()
        with in_background():
            compile_lowered(rec, ({},))
        assert len(rec.at) == 1 and rec.at[0] - start < 10
    finally:
        release.set()
        other.join()


def test_a_failing_background_compile_raises_in_the_caller():
    class Broken:
        def compile(self, **kwargs):
            raise RuntimeError("XLA said no")

    with in_background(), pytest.raises(RuntimeError, match="XLA said no"):
        compile_lowered(Broken(), ({},))
