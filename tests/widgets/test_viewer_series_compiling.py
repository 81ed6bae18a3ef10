"""A loop's first gradients change the layout of a refresh (parameters + gradients + optimizer state):
while the program for the new layout compiles, the viewer keeps refreshing with the programs it has
(the parameters' statistics and the optimizer state), the gradients follow once it is ready."""

import threading
import time

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from live_helpers import Clock

import nnx_lab
from nnx_lab.core.stats import _programs


def wait_for_compiles(timeout=120.0):
    deadline = time.monotonic() + timeout
    while _programs.compiling():
        assert time.monotonic() < deadline, "a statistics program took over two minutes to compile"
        time.sleep(0.02)


def test_a_viewer_keeps_refreshing_while_the_program_for_new_series_compiles(monkeypatch):
    model = nnx.Sequential(nnx.Linear(3, 5, rngs=nnx.Rngs(0)), nnx.Linear(5, 2, rngs=nnx.Rngs(1)))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    viewer = nnx_lab.watch(model, optimizer=opt, max_rate=100.0, display=False)
    watcher = viewer.watcher
    # The engine's injectable clock, moved on before each tick (from monotonic time: the times it holds stay comparable)
    clock = watcher.engine.clock = Clock(time.monotonic())
    wait_for_compiles()  # the program of the parameters and optimizer state (the viewer's first refresh)

    release = threading.Event()
    compile_program = _programs._compile

    def slow_compile(*args, **kwargs):  # every program compiled from now on takes until `release`
        release.wait(120)
        return compile_program(*args, **kwargs)

    monkeypatch.setattr(_programs, "_compile", slow_compile)

    def step():
        grads = nnx.grad(lambda m: (m(jnp.ones((4, 3))) ** 2).mean())(model)
        opt.update(model, grads)
        clock.later()  # the throttle allows every tick
        viewer.tick(grads=grads)
        watcher.wait()  # (published: what a later tick of a real loop would show)
        return watcher.snapshot

    try:
        counts = [watcher.refreshes]
        first = step()  # a new layout: reduced by the per-array kernels once, its program compiles meanwhile
        counts.append(watcher.refreshes)
        assert first.series.steps["grad"] == watcher.ticks
        for _ in range(3):
            snap = step()
            counts.append(watcher.refreshes)
            assert _programs.compiling()
            # parameters and optimizer state of this step; the gradients of the first, said stale
            assert [r.stats["norm"] for r in snap.rows] == pytest.approx(
                [np.sqrt((np.asarray(v, np.float64) ** 2).sum()) for v in snap_values(model)], rel=1e-5
            )
            assert snap.series.steps["mu"] == watcher.ticks and snap.series.opt_step == watcher.ticks
            assert snap.series.steps["grad"] == first.series.steps["grad"] and "grad" in snap.series.stale
            assert any("while the statistics program that adds them compiles" in p for p in snap.series.problems)
        assert counts == list(range(counts[0], counts[0] + 5))  # every tick published a refresh
    finally:
        release.set()
    wait_for_compiles()
    snap = step()  # the program is ready: the gradients are back, fresh
    assert snap.series.steps["grad"] == watcher.ticks and "grad" not in snap.series.stale
    assert not snap.series.problems


def snap_values(model):
    """The parameters' arrays in the viewer's row order (bias before kernel, layer by layer)."""
    return [var[...] for _, var in sorted(nnx.to_flat_state(nnx.state(model)), key=lambda kv: [str(k) for k in kv[0]])]
