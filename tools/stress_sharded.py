"""Repeat the sharded-transformer race of issue 24 N times in one process: a 4-block transformer
(65 arrays, kernels split over the 'model' axis) described by ``snapshot``, then watched with the
viewer's background thread refreshing as often as it can while 20 jitted steps with an all-reduce per
parameter run and tick; Explicit and Auto axes alternate, a fresh model each time. Before
core/stats/_shards.py this aborted in its first repetition (XLA's CPU rendezvous timeout).

    XLA_FLAGS=--xla_force_host_platform_device_count=2 python tools/stress_sharded.py 100

Prints ``OK <n> repetitions in <s> s <devices> devices``; a deadlock prints every thread's stack
after 50 minutes and exits non-zero.
"""

import faulthandler
import sys
import time

faulthandler.dump_traceback_later(3000, exit=True)
import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType

import nnx_lab


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


ok = 0
t0 = time.time()
for rep in range(int(sys.argv[1])):
    kind = (AxisType.Explicit, AxisType.Auto)[rep % 2]
    mesh = jax.make_mesh((1, jax.device_count()), ("batch", "model"), axis_types=(kind, kind))
    with jax.set_mesh(mesh):
        model = Transformer(4, 64, nnx.Rngs(rep))
        snap = nnx_lab.snapshot(model)
        viewer = nnx_lab.watch(model, display=False, max_rate=100.0)
        viewer._watcher.engine.throttle.budget = 1.0
        viewer._watcher.start_background()

        @jax.jit
        def step(state):
            scale = sum(jnp.mean(p * p) for p in jax.tree.leaves(state))
            return jax.tree.map(lambda p: p - 1e-3 * scale * p, state), scale

        state = nnx.state(model)
        for _ in range(20):
            state, loss = step(state)
            nnx.update(model, state)
            viewer.tick(loss=loss)
        viewer._watcher.stop_background()
        viewer.refresh()
        viewer._watcher.wait()
        assert viewer.status["state"] == "live", viewer.status
        assert len(snap.rows) == 65
        ok += 1
print("OK", ok, "repetitions in", round(time.time() - t0), "s", jax.device_count(), "devices")
