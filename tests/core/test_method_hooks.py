"""One patcher for module-class methods (graph.hook): a capture, the summary and find_nonfinite
overlapping, in any order, never undo each other, and every class gets its own function back."""

from __future__ import annotations

import threading

import jax.numpy as jnp
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.capture import Capture
from nnx_lab.core.graph import hook, hooked, unhook
from nnx_lab.core.summary import SummaryError


class Inner(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)

    def __call__(self, x):
        return self.linear(x) * 2


class Outer(nnx.Module):
    def __init__(self, rngs, gate=None):
        self.inner = Inner(rngs)
        self.gate = gate

    def __call__(self, x):
        if self.gate is not None:
            self.gate()
        return self.inner(x).sum()


class PausedSummary:
    """``nnx_lab.summary(model, x)`` traced on a thread of its own and held inside the model's call
    (its wrappers stand on the classes) until :meth:`finish`; ``gate`` is what the model calls."""

    def __init__(self):
        self.inside, self.go, self.thread_id, self.result = threading.Event(), threading.Event(), None, []

    def gate(self):
        if threading.get_ident() == self.thread_id:
            self.inside.set()
            self.go.wait(30)

    def start(self, model, x):
        def run():
            self.thread_id = threading.get_ident()
            self.result.append(nnx_lab.summary(model, x))

        self.thread = threading.Thread(target=run)
        self.thread.start()
        assert self.inside.wait(60)  # the summary is tracing

    def finish(self):
        self.go.set()
        self.thread.join(60)
        assert not self.thread.is_alive() and self.result


def _functions():
    return {cls: dict(vars(cls)) for cls in (Inner, Outer, nnx.Linear)}


def test_hooks_removed_out_of_order_keep_the_others_and_restore_the_original():
    before = _functions()
    keys = [(Inner, "__call__")]
    hook(keys, "a", lambda fn: lambda self, x: fn(self, x) + 1)
    hook(keys, "b", lambda fn: lambda self, x: fn(self, x) * 10)
    model = Inner(nnx.Rngs(0))
    x = jnp.zeros(3)
    bias = model.linear.bias[...]
    assert jnp.allclose(model(x), (bias * 2 + 1) * 10)
    unhook(keys, "a")  # the first one added leaves first
    assert jnp.allclose(model(x), bias * 2 * 10)
    unhook(keys, "b")
    assert hooked() == {} and _functions() == before


@pytest.mark.needs_flax("nnx.capture")
def test_a_capture_keeps_its_method_outputs_when_a_summary_ends_during_it():
    """The summary traced on another thread (as its widget's peak-memory compile does) started before
    the capture and ended during it: it used to put back the function it had found, removing the
    capture's wrapper, so the capture saw no method call after that (and a class stayed wrapped)."""
    before = _functions()
    summary = PausedSummary()
    model = Outer(nnx.Rngs(0), summary.gate)
    x = jnp.ones((2, 3))
    summary.start(model, x)
    with Capture(model, methods=True) as cap:
        summary.finish()  # the summary ended while the capture runs
        model(x)
    paths = sorted("/".join(map(str, p)) for p, _ in nnx.to_flat_state(cap.captured))
    assert any(p.startswith("__call__") for p in paths), paths
    assert any(p.startswith("inner/__call__") for p in paths), paths
    assert any(p.startswith("inner/linear/__call__") for p in paths), paths
    assert "Inner" in summary.result[0].to_text()  # the summary has its rows
    assert hooked() == {} and _functions() == before


@pytest.mark.needs_flax("nnx.capture")
def test_find_nonfinite_inside_a_capture():
    before = _functions()
    model = Outer(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    with Capture(model, methods=True) as cap:
        report = nnx_lab.find_nonfinite(lambda m, v: m(v), model, x)
        model(x)
    assert "finite" in report.to_text().lower()
    paths = sorted("/".join(map(str, p)) for p, _ in nnx.to_flat_state(cap.captured))
    assert any(p.startswith("inner/__call__") for p in paths), paths
    assert hooked() == {} and _functions() == before


class Log(nnx.Module):
    def __init__(self, rngs, gate=None):
        self.inner = Inner(rngs)
        self.gate = gate

    def __call__(self, x):
        if self.gate is not None:
            self.gate()
        return jnp.log(self.inner(x)).sum()


def test_find_nonfinite_names_the_culprit_when_a_summary_ends_during_its_run():
    """The summary's restore used to take find_nonfinite's wrappers off the classes mid-run: no module
    call was recorded after it, and the report could not name the module that made the NaN."""
    before = _functions()
    summary = PausedSummary()
    model = Log(nnx.Rngs(0), summary.gate)
    x = -jnp.ones((2, 3)) * 5  # log of a negative linear output somewhere: NaN
    summary.start(model, x)

    def forward(m, v):
        if not summary.go.is_set():
            summary.finish()
        return m(v)

    report = nnx_lab.find_nonfinite(forward, model, x)
    data = report.to_dict()
    assert data["direction"] == "forward", data
    assert (data["module_class"], data["method"], data["primitive"]) == ("Log", "__call__", "log"), data
    assert hooked() == {} and _functions() == before


class Boom(nnx.Module):
    def __init__(self, rngs):
        self.inner = Inner(rngs)

    def __call__(self, x):
        raise RuntimeError("boom in the model")


def test_a_summary_and_find_nonfinite_that_raise_give_every_method_back_and_can_run_again():
    """The recording of each (graph.Recording) is undone when the model's call raises: no class keeps a
    wrapper, and the next summary and search run (their one-at-a-time lock was let go)."""
    before = _functions()
    model = Boom(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    with pytest.raises(SummaryError, match="boom in the model"):
        nnx_lab.summary(model, x)
    assert hooked() == {} and _functions() == before
    with pytest.raises(RuntimeError, match="boom in the model"):
        nnx_lab.find_nonfinite(lambda m, v: m(v), model, x)
    assert hooked() == {} and _functions() == before and vars(Boom)["__call__"] is Boom.__call__
    good = Log(nnx.Rngs(0))
    assert "Inner" in nnx_lab.summary(good, x).to_text()
    data = nnx_lab.find_nonfinite(lambda m, v: m(v), good, -x * 5).to_dict()
    assert (data["module_class"], data["primitive"]) == ("Log", "log"), data
    assert hooked() == {} and _functions() == before


def test_a_summary_inside_find_nonfinite_on_one_thread_leaves_the_search_its_records():
    """Both record the same classes' calls at once (nnx.Linear, Inner): the summary's trace, run by
    ``fn`` in the middle of the search's run, ends first; the search still records the calls after it
    and names the culprit, and the summary has its rows."""
    before = _functions()
    summaries = []

    def forward(m, v):
        summaries.append(nnx_lab.summary(Outer(nnx.Rngs(1)), jnp.ones((2, 3))))
        return m(v)

    data = nnx_lab.find_nonfinite(forward, Log(nnx.Rngs(0)), -jnp.ones((2, 3)) * 5).to_dict()
    assert (data["direction"], data["module_class"], data["primitive"]) == ("forward", "Log", "log"), data
    assert data["calls"] == 3, data  # Log, Inner and Linear: the last two hooked by both
    assert "Inner" in summaries[0].to_text() and "Linear" in summaries[0].to_text()
    assert hooked() == {} and _functions() == before
