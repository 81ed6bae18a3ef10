"""Models sharded over several (host) devices, watched while they train: never a deadlock.

A sharded array's statistics come from its shards (core/stats/_shards.py), so nnx_lab launches no
collective in one process. Before, the 4-block transformer below (65 arrays over 2 devices) aborted
the process in its first snapshot (about 40 independent all-reduce programs in flight on XLA's CPU
client), and ``watch(model, optimizer=...)`` did the same before any step (first calls compiled and
run from a pool of threads). Each case runs in a subprocess: the device count is fixed when jax starts.

Reaches inside ``nnx_lab.core.stats`` (why this file may): a sharded array's statistics are checked
against the kernels run on the whole array, shard by shard (``_shards``, ``_kernels``, ``_stacked``),
and a replicated array's cached executable is counted (``_executables``).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

MODEL = textwrap.dedent("""
    import collections, faulthandler, json, sys, threading, time
    faulthandler.dump_traceback_later(int(sys.argv[1]), exit=True)  # a deadlock prints where, then fails
    import jax, jax.numpy as jnp, numpy as np, optax
    from jax.sharding import AxisType
    from flax import nnx
    import nnx_lab
    from nnx_lab.core import compat

    def sharded(spec):
        return nnx.with_partitioning(nnx.initializers.lecun_normal(), spec)

    class Block(nnx.Module):
        def __init__(self, d, rngs):
            self.attn = nnx.MultiHeadAttention(8, d, kernel_init=sharded((None, None, "model")), decode=False, rngs=rngs)
            self.ln1, self.ln2 = nnx.LayerNorm(d, rngs=rngs), nnx.LayerNorm(d, rngs=rngs)
            self.up = nnx.Linear(d, 4 * d, kernel_init=sharded((None, "model")), rngs=rngs)
            self.down = nnx.Linear(4 * d, d, kernel_init=sharded(("model", None)), rngs=rngs)

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.down(jax.nn.relu(self.up(self.ln2(x))))

    class Transformer(nnx.Module):
        def __init__(self, blocks, d, rngs):
            self.embed = nnx.Embed(5000, d, rngs=rngs)
            blocks = [Block(d, rngs) for _ in range(blocks)]
            self.blocks = nnx.List(blocks) if hasattr(nnx, "List") else blocks  # flax 0.11: a plain list

        def __call__(self, ids):
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x)
            return jnp.mean(x * x)

    def values(model):
        return {tuple(path): np.asarray(jax.device_get(compat.get_value(v)), np.float64)
                for path, v in nnx.to_flat_state(nnx.state(model))}

    def check(snap, model):
        # every row's statistics against numpy on the gathered values (gathered here, by the test)
        want = values(model)
        checked = 0
        for row in snap.rows:
            key = tuple(row.path)
            x = want.get(key)
            if x is None or row.stats is None:
                continue
            for name, w in (("mean", x.mean()), ("std", x.std()), ("min", x.min()), ("max", x.max()),
                            ("norm", float(np.sqrt((x * x).sum())))):
                assert abs(row.stats[name] - w) <= 1e-4 * max(1.0, abs(w)), (key, name, row.stats[name], w)
            checked += 1
        return checked
""")

REPRO = MODEL + textwrap.dedent("""
    mesh = jax.make_mesh((1, 2), ("batch", "model"), axis_types=(AxisType.Explicit,) * 2)
    out = {}
    with jax.set_mesh(mesh):
        model = Transformer(4, 256, nnx.Rngs(0))
    with jax.transfer_guard_device_to_host("disallow"):
        snap = nnx_lab.snapshot(model)
    out["arrays"] = len(snap.rows)
    out["sharded"] = sum(1 for r in snap.rows if "model" in (r.sharding or ""))
    out["checked"] = check(snap, model)

    # The same model on an Auto mesh, watched with its optimizer, trained 30 steps.
    mesh = jax.make_mesh((1, 2), ("batch", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        model = Transformer(2, 256, nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        viewer = nnx_lab.watch(model, optimizer=optimizer, display=False)

        @nnx.jit
        def step(model, optimizer, ids):
            loss, grads = nnx.value_and_grad(lambda m: m(ids))(model)
            optimizer.update(model, grads)  # flax >= 0.11
            return loss, grads

        ids = jnp.zeros((4, 8), jnp.int32)
        for _ in viewer.track(range(30)):
            loss, grads = step(model, optimizer, ids)
            viewer.log(loss=loss, grads=grads)
        viewer._watcher.wait()
    out["status"] = viewer.status
    out["checked_after"] = check(viewer._watcher.snapshot, model)
    series = viewer._watcher.snapshot.series
    norm = 4  # STAT_NAMES.index("norm")
    out["series"] = {name: int(np.isfinite(m[:, norm]).sum()) for name, m in series.matrices.items()}
    out["series_steps"] = series.steps
    print("RESULT " + json.dumps(out))
""")

SHARDS = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from flax import nnx
    import nnx_lab
    from nnx_lab.core.stats import _programs, _stats
    from nnx_lab.core.stats._kernels import kernel_and_names
    from nnx_lab.core.stats._shards import ShardParts
    from nnx_lab.core.stats._stacked import stacked
    from nnx_lab.core.watcher import Watcher

    mesh = jax.make_mesh((2, 4), ("data", "model"))
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(16, 8)) * 3 + 1).astype(np.float32)
    bad = x.copy(); bad[1, 2], bad[5, 5], bad[9, 1] = np.nan, np.inf, -np.inf
    ints = rng.integers(-1000, 1000, size=(16, 8)).astype(np.int32)
    layered = rng.normal(size=(4, 8, 8)).astype(np.float32) * np.arange(1, 5)[:, None, None]
    cases = {
        "cols": (x, P(None, "model")), "both": (x, P("data", "model")), "replicated": (x, P()),
        "partly": (x, P("data")), "nonfinite": (bad, P("data", "model")), "ints": (ints, P("model")),
        "bools": (ints > 0, P("data")), "bf16": (x.astype(jnp.bfloat16), P("data", "model")),
        "layers": (layered, P("data", None, "model")),  # 4 layers: 2 per shard along 'data'
    }
    tree = {k: jax.device_put(v, NamedSharding(mesh, spec)) for k, (v, spec) in cases.items()}
    out = {"rows": {}}
    w = Watcher(tree, layers={"layers": 0})
    for i in range(4):  # the per-array kernels, then the programs (one-pass guesses, checked on the host)
        w.refresh(force=True)  # (forced: not throttled)
        while _programs.compiling():
            import time; time.sleep(0.05)
    with jax.transfer_guard_device_to_host("disallow"):
        w.refresh(force=True)
    for row in w.snapshot.rows:
        key = row.path_text
        name = row.path[0]
        v = np.asarray(cases[name][0], np.float64)
        if row.layer_of is not None or (name == "layers" and row.layer is not None):
            v = v[row.layer]
        f = v[np.isfinite(v)]
        out["rows"][key] = {"stats": row.stats, "status": row.status, "numpy": {
            "mean": f.mean(), "std": f.std(), "min": f.min(), "max": f.max(), "norm": float(np.sqrt((f * f).sum())),
            "abs_max": float(np.abs(f).max()), "nan_count": int(np.isnan(v).sum()), "inf_count": int(np.isinf(v).sum()),
            "zero_frac": float((v == 0).mean())}}
    # Under the user's own mesh context (Explicit axes, as flax's miniGPT example): our shard_map's
    # private 1-D mesh is put in context around each call
    from jax.sharding import AxisType
    explicit = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(explicit):
        inside = {"both": jax.device_put(x, NamedSharding(explicit, P("data", "model")))}
        w2 = Watcher(inside)
        for i in range(3):
            w2.refresh(force=True)
            while _programs.compiling():
                import time; time.sleep(0.05)
        out["under_mesh"] = [w2.state, w2.snapshot.rows[0].status, w2.snapshot.rows[0].stats["mean"], float(x.mean())]

    # No collective in anything nnx_lab compiled: the viewer's programs and the stacked shards' kernels
    COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
    def collectives(compiled):
        text = compiled.as_text()
        return sum(text.count(c) for c in COLLECTIVES)
    programs = [p for p in _programs._programs.values() if isinstance(p, _programs.Program)]
    out["program_collectives"] = sum(collectives(p._executable) for p in programs)
    out["programs"] = len(programs)
    out["program_devices"] = sorted(len(key[0][3].device_set) for key, p in _programs._programs.items()
                                    if isinstance(p, _programs.Program))
    kernel_collectives = 0
    for name, x in tree.items():
        shards = ShardParts([x], {"layers": 0}.get(name) and {0: (0, 4)})
        for part in shards.expand([x]):
            if len(part.sharding.device_set) > 1:
                for kernel in kernel_and_names(part.dtype)[:2]:
                    if kernel is not None:
                        kernel = stacked(kernel, tuple(part.sharding.mesh.devices.flat))
                        kernel_collectives += collectives(kernel.lower(part).compile())
    out["kernel_collectives"] = kernel_collectives
    print("RESULT " + json.dumps(out, default=str))
""")

HISTOGRAMS = textwrap.dedent("""
    import faulthandler, json, sys
    faulthandler.dump_traceback_later(int(sys.argv[1]), exit=True)
    import jax, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from nnx_lab.core.stats import histograms_dispatch, histograms_fetch
    mesh = jax.make_mesh((2,), ("m",))
    xs = [np.random.default_rng(i).normal(size=(64, 8)).astype(np.float32) for i in range(100)]
    hists = histograms_fetch(histograms_dispatch([jax.device_put(x, NamedSharding(mesh, P("m"))) for x in xs], 16))
    print("RESULT " + json.dumps([[sum(h[2:]), h[0], h[1], float(x.min()), float(x.max())] for h, x in zip(hists, xs)]))
""")

CACHED = textwrap.dedent("""
    import json
    import jax, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from nnx_lab.core.stats import compute_stats
    from nnx_lab.core.stats._executables import executables_count
    x = np.arange(128, dtype=np.float32).reshape(16, 8); x[1, 2] = np.nan
    replicated = jax.device_put(x, NamedSharding(jax.make_mesh((2, 4), ("data", "model")), P()))
    elsewhere = jax.device_put(x, jax.devices()[3])
    stats = compute_stats([replicated, elsewhere])
    print("RESULT " + json.dumps([[s["mean"], s["nan_count"]] for s in stats] + [executables_count()]))
""")

STRESS = MODEL + textwrap.dedent("""
    # The viewer refreshing from its background thread at its highest rate, and at every tick, while
    # the user's jitted step (with collectives) runs: Explicit and Auto axes, shallow and deep models.
    class MLPBlock(nnx.Module):
        def __init__(self, d, rngs):
            self.norm = nnx.LayerNorm(d, rngs=rngs)
            self.up = nnx.Linear(d, 2 * d, kernel_init=sharded((None, "model")), rngs=rngs)
            self.down = nnx.Linear(2 * d, d, kernel_init=sharded(("model", None)), rngs=rngs)

    class Stack(nnx.Module):
        def __init__(self, blocks, d, rngs):
            blocks = [MLPBlock(d, rngs) for _ in range(blocks)]
            self.blocks = nnx.List(blocks) if hasattr(nnx, "List") else blocks

    devices = jax.device_count()
    out = []
    for kind in (AxisType.Explicit, AxisType.Auto):
        for blocks in (10, 100):
            mesh = jax.make_mesh((1, devices), ("batch", "model"), axis_types=(kind, kind))
            with jax.set_mesh(mesh):
                model = Stack(blocks, 16, nnx.Rngs(0))
                viewer = nnx_lab.watch(model, display=False, max_rate=100.0)
                # as often as it can (every 10 ms, whatever a refresh costs): the most launches racing the loop's
                viewer._watcher.engine.throttle.cost = lambda seconds: None
                viewer._watcher.start_background()

                @jax.jit
                def step(state):  # every parameter's update needs an all-reduce (its mean square), on both kinds of axes
                    scale = sum(jnp.mean(p * p) for p in jax.tree.leaves(state))
                    return jax.tree.map(lambda p: p - 1e-3 * scale * p, state), scale

                state = nnx.state(model)
                # 100 steps, and on until refreshes have raced them (a loaded machine compiles the
                # viewer's program slower than it runs 100 steps), for at most 90 s
                i, start, flying = 0, time.monotonic(), collections.deque()
                while i < 100 or (viewer.status["refreshes"] < 3 and time.monotonic() - start < 90):
                    state, loss = step(state)
                    nnx.update(model, state)
                    viewer.tick(loss=loss)
                    i += 1
                    # At most 16 steps ahead of the devices, as any loop on XLA's CPU client must stay:
                    # with 32 in flight per device it deadlocks by itself, viewer or not (docs/guide/snapshot.md).
                    flying.append(loss)
                    if len(flying) > 16:
                        flying.popleft().block_until_ready()
                viewer._watcher.stop_background()
                viewer.refresh()
                viewer._watcher.wait()
                out.append([str(kind), blocks, viewer.status["state"], viewer.status["refreshes"],
                             check(viewer._watcher.snapshot, model)])
    print("RESULT " + json.dumps(out))
""")


PER_ARRAY = MODEL + textwrap.dedent("""
    # Every refresh reduces each array by its own kernel, as a viewer's first refreshes do while the
    # model's one-launch program compiles (here for good: chunks of one array get no program): from the
    # background thread at its highest rate and at ticks, for 15 s, while a loop runs 8-device steps
    # with all-reduces.
    from nnx_lab.core.stats import _plan
    _plan.MAX_PROGRAM_ARRAYS = 1

    class Block(nnx.Module):
        def __init__(self, d, rngs):
            self.norm = nnx.LayerNorm(d, rngs=rngs)  # replicated: reduced on device 0
            self.up = nnx.Linear(d, 2 * d, kernel_init=sharded((None, "model")), rngs=rngs)

    class Stack(nnx.Module):
        def __init__(self, blocks, d, rngs):
            blocks = [Block(d, rngs) for _ in range(blocks)]
            self.blocks = nnx.List(blocks) if hasattr(nnx, "List") else blocks

    mesh = jax.make_mesh((1, jax.device_count()), ("batch", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        model = Stack(40, 16, nnx.Rngs(0))
        viewer = nnx_lab.watch(model, display=False, max_rate=100.0)
        viewer._watcher.engine.throttle.cost = lambda seconds: None
        viewer._watcher.start_background()

        # a step about as long on its devices as the loop's Python (the device is busy, never far behind)
        data = jax.device_put(np.ones((8 * 64, 1024), np.float32), jax.NamedSharding(mesh, jax.P("model")))

        @jax.jit
        def step(state, data):
            scale = sum(jnp.mean(p * p) for p in jax.tree.leaves(state)) + jnp.mean(jnp.tanh(data @ data.T))
            return jax.tree.map(lambda p: p - 1e-3 * scale * p, state), scale

        state = nnx.state(model)
        steps, start, flying = 0, time.monotonic(), collections.deque()
        while time.monotonic() - start < 15:
            state, loss = step(state, data)
            nnx.update(model, state)
            viewer.tick(loss=loss)
            steps += 1
            flying.append(loss)  # at most 16 steps ahead (as in STRESS: XLA's own limit stays far off)
            if len(flying) > 16:
                flying.popleft().block_until_ready()
        viewer._watcher.stop_background()
        viewer.refresh()
        viewer._watcher.wait()
    print("RESULT " + json.dumps([steps, viewer.status["state"], viewer.status["refreshes"],
                                  check(viewer._watcher.snapshot, model)]))
""")


def _run(script: str, devices: int, timeout: int) -> object:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(timeout - 20)], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.rsplit("RESULT ", 1)[1])


def test_a_transformer_sharded_over_two_devices_is_described_and_watched_while_it_trains():
    out = _run(REPRO, 2, 600)
    assert out["arrays"] == 65 and out["sharded"] >= 16
    assert out["checked"] >= 60  # every sharded and replicated array equals numpy
    assert out["status"]["state"] == "live" and out["status"]["refreshes"] >= 2, out["status"]
    assert out["checked_after"] >= 30
    # gradients and Adam's moments of every parameter, gradients from the last step
    assert out["series"]["grad"] >= 30 and out["series"]["mu"] >= 30 and out["series"]["nu"] >= 30, out["series"]
    assert out["series_steps"]["grad"] == 30, out["series_steps"]


def test_sharded_statistics_are_combined_from_single_device_shards_exactly():
    out = _run(SHARDS, 8, 600)
    state, status, mean, want = out["under_mesh"]
    assert (state, status) == ("live", "ok") and mean == pytest.approx(want, rel=1e-6)
    assert out["program_collectives"] == 0 and out["kernel_collectives"] == 0
    # one program over the 8 devices (the stacked shards), and single-device ones (replicated arrays'
    # one shard on device 0, the 2 shards of a layer-sharded or partly replicated array): not one per device
    assert out["programs"] <= 4 and 8 in out["program_devices"], out
    rows = out["rows"]
    assert len(rows) == 9 + 4  # the stacked Variable: its row and one per layer
    for key, row in rows.items():
        stats, want = row["stats"], row["numpy"]
        assert stats is not None, (key, row)
        for name, value in stats.items():
            if value is None:
                continue
            w = want[name]
            tol = 1e-2 if "bf16" in key else 1e-5
            assert abs(value - w) <= tol * max(1.0, abs(w)), (key, name, value, w)
    assert rows["nonfinite"]["stats"]["nan_count"] == 1 and rows["nonfinite"]["stats"]["inf_count"] == 2
    assert rows["ints"]["stats"]["min"] == int(rows["ints"]["numpy"]["min"])  # exact integer extremes


def test_kernels_kept_on_disk_load_onto_their_own_device(tmp_path, monkeypatch):
    """A later session loads a shard's (or a device-3 array's) kernels from the disk cache onto that
    device; loaded for every device (jax's default), running them aborted the process on jax 0.7.2."""
    monkeypatch.setenv("NNX_LAB_CACHE_DIR", str(tmp_path / "cache"))
    want = float(np.nanmean(np.where(np.arange(128) == 10, np.nan, np.arange(128.0))))
    for session in range(2):  # the second session loads what the first one compiled
        out = _run(CACHED, 8, 300)
        assert out[:2] == [[pytest.approx(want), 1]] * 2, (session, out)
        assert out[2] >= 2, out  # the kernels were compiled or loaded through the cache


def test_histograms_of_many_sharded_values_complete():
    """A capture's histograms of 100 sharded intermediates (each kernel has an all-reduce): at most a
    few in flight at once; all of them in flight deadlocked XLA's CPU client."""
    out = _run(HISTOGRAMS, 2, 300)
    assert len(out) == 100
    for total, lo, hi, want_lo, want_hi in out:
        assert total == 64 * 8
        assert lo == pytest.approx(want_lo, rel=1e-3) and hi == pytest.approx(want_hi, rel=1e-3)


@pytest.mark.parametrize("devices", [2, 4, 8])
def test_refreshing_from_a_thread_while_sharded_steps_run_never_deadlocks(devices):
    out = _run(STRESS, devices, 600)
    assert len(out) == 4
    for kind, blocks, state, refreshes, checked in out:
        assert state == "live", (kind, blocks, state)
        assert refreshes >= 3, (kind, blocks, refreshes)
        assert checked == blocks * 6, (kind, blocks, checked)  # every array's statistics equal numpy


def test_a_viewers_kernels_never_fill_a_device_queue_under_sharded_steps():
    """XLA's CPU client admits 32 computations in flight per device, and runs each device's part of
    an 8-device step on one of its 8 threads: a launch that finds a device full waits on one of them,
    and the step's all-reduce, one thread short, aborted the process ("only 7 of them arrived"). A
    viewer's per-array kernels (hundreds on device 0 behind the step that makes their arrays) filled
    device 0 that way in 6 of 8 runs of this loop before (the same loop without a viewer: 0 of 3).
    nnx_lab keeps at most a few launches of its own in flight per device (core/stats/_inflight.py)."""
    steps, state, refreshes, checked = _run(PER_ARRAY, 8, 300)
    assert steps > 100 and state == "live" and refreshes >= 3, (steps, state, refreshes)
    assert checked == 40 * 4  # every array's statistics equal numpy
