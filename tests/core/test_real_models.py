"""flax's example architectures (benchmarks/models.py: the diffusion U-Net, miniGPT on a 2-device mesh,
a ViT, the MNIST tutorial's CNN) at small sizes: a snapshot, a viewer with the optimizer over a few
training steps that log their gradients, and a capture of one forward. Behaviour, not timings.

All four run in one subprocess: miniGPT needs two (forced host) devices, fixed when jax starts, and
XLA's backend optimizations are off there (the U-Net's training step otherwise compiles for minutes
on a loaded 2-core CPU; what is checked does not depend on them).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import contextlib, io, json, math, sys
    sys.path.insert(0, sys.argv[1])
    import jax
    import nnx_lab
    from nnx_lab.core import compat
    from nnx_lab.core.capture import capture_call, flatten_captured
    import models

    SMALL = {"unet": dict(features=4, batch=4),
             "minigpt": dict(maxlen=8, vocab_size=64, embed_dim=16, num_heads=2, feed_forward_dim=16, blocks=2,
                             batch=4),
             "vit": dict(num_layers=2, hidden_size=16, num_heads=2, mlp_dim=32, batch=4),
             "mnist": dict(batch=8)}
    out = {}
    for name, kwargs in SMALL.items():
        s = models.MAKERS[name](**kwargs)
        got = out[name] = {}
        with (models._use_mesh(s.mesh) if s.mesh is not None else contextlib.nullcontext()):
            arrays = [a for a in jax.tree_util.tree_leaves(s.model) if isinstance(a, jax.Array)]  # flax 0.11: functions too
            snap = nnx_lab.snapshot(s.model)
            got["arrays"], got["rows"] = len(arrays), len(snap.rows)
            got["sharded"] = sum(len(a.sharding.device_set) > 1 for a in arrays)
            got["rows_without_stats"] = [r.path_text for r in snap.rows if str(r.dtype).startswith("float")
                                         and (r.stats is None or r.stats.get("norm") is None)]
            viewer = nnx_lab.watch(s.model, optimizer=s.optimizer, display=False, max_rate=100.0)
            steps = 3
            for i in range(steps):
                loss, grads = s.step(*s.batches[i % len(s.batches)])
                viewer.log(loss=loss, grads=grads)
                if i < steps - 1:
                    viewer.tick()
            viewer.watcher.refresh(force=True)  # the last step's gradients, as a loop's end refresh takes them
            last = viewer.last_snapshot
            series = last.series
            got["status"] = viewer.status
            got["names"] = list(series.names)
            got["grad_step"] = series.steps.get("grad")
            got["ticks"] = viewer.watcher.ticks
            g = series.matrices["grad"]
            params = [i for i, r in enumerate(last.rows) if r.type == "Param"]
            got["params"] = len(params)
            got["params_without_grad"] = [last.rows[i].path_text for i in params if math.isnan(g[i][0])]
            got["problems"] = [p for ps in series.problems.values() for p in ps] if isinstance(series.problems, dict) \\
                else list(series.problems)
            viewer.close()
            # %%nnx_capture's capture of one jitted forward, its method outputs included (flax >= 0.12.6)
            if not compat.has("nnx.capture"):
                got["captured"] = None
                continue
            y, captured = capture_call(s.model, lambda *a: s.forward(s.model, *a), *s.inputs, methods=True)
            leaves = jax.tree_util.tree_leaves(flatten_captured(captured))
            got["captured"] = len(leaves)
            got["output_captured"] = any(tuple(v.shape) == tuple(y.shape) for v in leaves)
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def results():
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=2 --xla_backend_optimization_level=0",
    )
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, os.path.join(ROOT, "benchmarks")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("name", ["unet", "minigpt", "vit", "mnist"])
def test_snapshot_viewer_with_grads_and_capture(results, name):
    got = results[name]
    assert got["rows"] == got["arrays"] > 0
    assert got["rows_without_stats"] == []
    assert got["status"]["state"] == "live" and not got["status"]["message"], got["status"]
    assert got["problems"] == []
    assert "grad" in got["names"] and {"mu", "nu"} <= set(got["names"]) or name == "vit"  # ViT: SGD, momentum
    assert got["grad_step"] == got["ticks"] + 1 == 3  # the last step's gradients (logged before its tick)
    assert got["params"] > 0 and got["params_without_grad"] == []
    assert got["captured"] is None or (got["captured"] > 0 and got["output_captured"])  # None: flax < 0.12.6


def test_minigpt_is_sharded_over_two_devices(results):
    assert results["minigpt"]["sharded"] > 0
