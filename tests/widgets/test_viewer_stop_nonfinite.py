"""``viewer.track/tick(..., stop_on_nonfinite=True, keep_last_good=...)``: a loop stops at its first
NaN/Inf step, no step waits for its own check, and the state from before the bad step can be restored."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab import watch


def make():
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


@nnx.jit
def train_step(model, opt, x, loss_nan, grad_nan):
    def loss_fn(m):
        y = m(x)
        # grad_nan: sqrt at 0 gives an infinite gradient while the loss stays finite
        extra = jnp.sqrt(jnp.abs(y[0, 0] - y[0, 0]) + 1.0 - grad_nan)
        return jnp.mean(y**2) * jnp.where(loss_nan, jnp.nan, 1.0) + extra

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    opt.update(model, grads)
    return loss, grads


def run(viewer, model, opt, steps, bad_loss=None, bad_grad=None, **kw):
    """Step numbers are the viewer's: the first step is 1. Returns the steps that ran."""
    ran = []
    x = jnp.ones((4, 3))
    for i in viewer.track(range(1, steps + 1), stop_on_nonfinite=True, **kw):
        loss, grads = train_step(model, opt, x, i == bad_loss, i == bad_grad)
        viewer.log(loss=loss, grads=grads)
        ran.append(i)
    return ran


@pytest.mark.parametrize("k", [1, 6])
def test_a_nan_loss_at_step_k_stops_the_loop_at_k_or_the_next_step_naming_it(k):
    model, opt = make()
    viewer = watch(model, optimizer=opt, display=False)
    with pytest.raises(nnx_lab.NonFiniteStep) as err:
        run(viewer, model, opt, 20, bad_loss=k)
    e = err.value
    assert e.step == k and "loss" in e.what
    assert "call nnx_lab.find_nonfinite(loss_fn, model, batch) with this step's batch" in str(e)
    assert f"stopped at step {k}: loss" in viewer.status["message"]


def test_only_the_gradients_non_finite_also_stops_naming_the_gradient_paths():
    model, opt = make()
    viewer = watch(model, optimizer=opt, display=False)
    ran = []
    with pytest.raises(nnx_lab.NonFiniteStep) as err:
        for i in viewer.track(range(1, 21), stop_on_nonfinite=True):
            ran.append(i)
            loss, grads = train_step(model, opt, jnp.ones((4, 3)), False, i == 4)
            viewer.log(loss=loss, grads=grads)
    assert err.value.step == 4 and ran[-1] in (4, 5)
    assert "loss" not in err.value.what and "grads.kernel" in err.value.what
    assert "stopped at step 4: " in viewer.status["message"] and "grads.kernel" in viewer.status["message"]


def test_a_finite_run_of_50_steps_is_not_stopped():
    model, opt = make()
    viewer = watch(model, optimizer=opt, display=False)
    assert run(viewer, model, opt, 50) == list(range(1, 51))
    assert "stopped" not in viewer.status["message"] and viewer.last_good is None


def test_keep_last_good_restores_the_model_and_optimizer_as_they_were_before_the_bad_step():
    model, opt = make()
    viewer = watch(model, optimizer=opt, display=False)
    k, before = 7, {}
    x = jnp.ones((4, 3))
    with pytest.raises(nnx_lab.NonFiniteStep) as err:
        for i in viewer.track(range(1, 21), stop_on_nonfinite=True, keep_last_good=True):
            before[i] = jax.device_get((nnx.state(model), nnx.state(opt)))  # the test's own copy
            loss, grads = train_step(model, opt, x, i == k, False)
            viewer.log(loss=loss, grads=grads)
            if i == 2:  # the status line says what the kept copy costs
                viewer._watcher.listeners.notify()
                assert "last good state kept: up to 2 × " in viewer.status["message"]
    assert err.value.step == k and "restore_last_good()" in str(err.value)
    assert np.isnan(np.asarray(model.kernel[...])).any()  # the bad step wrote NaN into the model
    assert viewer.restore_last_good() == k
    now = jax.device_get((nnx.state(model), nnx.state(opt)))
    for a, b in zip(jax.tree.leaves(now), jax.tree.leaves(before[k]), strict=True):
        np.testing.assert_array_equal(a, b)  # bit-identical, optimizer count included
    assert viewer.last_good.nbytes == sum(x.nbytes for x in jax.tree.leaves(before[k]))


def test_without_keep_last_good_no_extra_arrays_stay_alive():
    def live_after(stop: bool) -> int:
        model, opt = make()
        viewer = watch(model, optimizer=opt, display=False, updates=False)
        x = jnp.ones((4, 3))
        for _ in viewer.track(range(1, 11), stop_on_nonfinite=stop):
            loss, grads = train_step(model, opt, x, False, False)
            viewer.log(loss=loss, grads=grads)
        del loss, grads
        viewer._watcher.wait()
        n = len(jax.live_arrays())
        viewer.close()
        return n

    live_after(True)  # compiled
    assert live_after(True) == live_after(False)


def test_no_tick_waits_for_its_own_step_only_for_the_one_before():
    @jax.jit
    def slow(x):  # a step that takes ~0.5 s on the device (here the CPU, dispatched asynchronously)
        for _ in range(30):
            x = jnp.sin(x @ x)
        return x

    model, _ = make()
    viewer = watch(model, display=False, max_rate=0.001)
    x = jnp.ones((1500, 1500)) / 1500
    slow(x).block_until_ready()  # compiled
    guard, reads = viewer._watcher.guard, []  # (the tick's step, the step whose flags it read)
    read = guard._read
    guard._read = lambda pending: (reads.append((viewer._watcher.ticks, pending[0])), read(pending))[-1]
    states = []
    for _ in range(3):
        x = slow(x)
        viewer.tick(loss=x.sum(), stop_on_nonfinite=True)
        states.append(x.is_ready())  # the tick returned while its own step was still running
    assert states == [False, False, False]
    assert reads == [(2, 1), (3, 2)]


def test_tick_stops_too_and_keep_last_good_needs_stop_on_nonfinite():
    model, opt = make()
    viewer = watch(model, optimizer=opt, display=False)
    with pytest.raises(ValueError, match="keep_last_good=True needs stop_on_nonfinite=True"):
        viewer.track(range(3), keep_last_good=True)
    with pytest.raises(nnx_lab.NonFiniteStep) as err:
        for i in range(1, 10):
            loss, grads = train_step(model, opt, jnp.ones((4, 3)), i == 3, False)
            viewer.tick(loss=loss, grads=grads, stop_on_nonfinite=True)
    assert err.value.step == 3


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "complex64"])
@pytest.mark.parametrize("bad", [None, np.nan, np.inf, -np.inf])
def test_every_float_dtype_is_checked_exactly_and_huge_finite_values_are_not_flagged(dtype, bad):
    """The check names exactly the leaf that holds a NaN/Inf; a leaf of the largest finite values
    (whose sum would overflow) and a loss at the dtype's maximum pass."""
    from nnx_lab.core.training import StepGuard

    big = float(jnp.finfo(jnp.dtype(dtype)).max)
    grads = {"a": jnp.full((64, 33), big, dtype), "b": jnp.ones((7,), dtype), "c": jnp.zeros((3, 3), dtype)}
    if bad is not None:
        grads["b"] = grads["b"].at[5].set(bad)
    guard = StepGuard()
    guard.arm()
    guard.log(1, {"loss": jnp.asarray(big, dtype)}, grads)
    if bad is None:
        guard.tick(1, last=True)
        assert guard.stopped is None
    else:
        with pytest.raises(nnx_lab.NonFiniteStep) as e:
            guard.tick(1, last=True)
        assert e.value.what == ("grads.b",), e.value.what
