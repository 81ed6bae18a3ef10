"""The capture panel's descriptions run on the live-refresh engine (issue 26): a loop's end does not
wait for the device where a thread may publish, a failing description is a status and one log line,
and the engine's throttle runs on an injected clock; in a training loop a panel keeps every call but
describes at most max_rate times a second.

Reaches inside ``nnx_lab.widgets._describing`` (why this file may): the descriptions' engine is driven
directly (a gate decides when a description's numbers arrive) and the widget modules' clock is moved
by the test, so throttling is checked without sleeping; no public API exposes either.
"""

from __future__ import annotations

import logging
import threading

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from test_capture_panel import Net, X, row_paths

import nnx_lab.widgets._describing as describing
from nnx_lab.core.live import Pending, Throttle
from nnx_lab.widgets.capture import capture_panel


@pytest.fixture
def model():
    return Net(nnx.Rngs(0))


class Model(nnx.Module):
    def __init__(self):
        self.linear = nnx.Linear(2, 3, rngs=nnx.Rngs(0))

    def __call__(self, x):
        y = self.linear(x)
        self.sow(nnx.Intermediate, "act", y)
        return y


class Gate:
    """A pending description whose numbers arrive when the test says so."""

    def __init__(self, report):
        self.report, self.host_s, self.arrived = report, 0.0, threading.Event()

    def ready(self) -> bool:
        return self.arrived.is_set()

    def wait(self) -> None:
        assert self.arrived.wait(10)

    def finish(self):
        return self.report


def test_a_loop_end_shows_its_last_call_from_a_thread(monkeypatch):
    monkeypatch.setattr(describing, "background_unsupported", lambda: None)  # as in a kernel that takes thread messages
    shown, published = [], threading.Event()
    gate = Gate("report")
    assert isinstance(gate, Pending)  # what the engine takes: the Protocol's face
    descriptions = describing.Descriptions(
        Throttle(2.0, 0.02, what="descriptions"),
        show=lambda report, modules, **kw: (shown.append((report, modules, kw)), published.set()),
        fail=lambda text: shown.append(text),
    )
    descriptions.hold(lambda: gate, ["m"], 0.25, None)
    assert descriptions.flush(wait=False) is True  # on its way: the caller did not wait
    assert shown == [] and descriptions.unshown is None
    gate.arrived.set()
    assert published.wait(10)
    assert shown == [("report", ["m"], {"elapsed": 0.25, "loss": None})]
    assert descriptions.flush(wait=False) is False  # nothing left


@pytest.mark.needs_flax("nnx.capture")
def test_a_failing_description_is_a_status_and_logged_once(caplog):
    model = Model()  # held: the panel holds it weakly
    panel = capture_panel(model, display=False)

    def broken():
        raise RuntimeError("the device went away\nmore detail")

    with caplog.at_level(logging.DEBUG, logger="nnx_lab"):
        for _ in range(2):
            panel._descriptions.hold(broken, [], 0.0, None)
            panel.flush()
    assert panel.status["level"] == "error"
    assert panel.status["message"] == "describing the captured values failed: RuntimeError: the device went away"
    warned = [r for r in caplog.records if r.name == "nnx_lab" and r.levelno >= logging.WARNING]
    assert len(warned) == 1 and warned[0].exc_info is not None
    panel(jnp.ones((1, 2)))  # the next call is described again
    assert panel.status["level"] == "" and panel.last_report is not None


def test_descriptions_are_throttled_on_the_engines_clock():
    now = [0.0]
    descriptions = describing.Descriptions(
        Throttle(2.0, 0.02, what="descriptions"), show=lambda *a, **k: None, fail=print
    )
    descriptions.engine.clock = lambda: now[0]
    made = []

    def describe():
        made.append(now[0])
        gate = Gate("r")
        gate.arrived.set()
        return gate

    for _ in range(10):  # a step every 0.125 s: a description every 0.5 s at most
        now[0] += 0.125
        descriptions.hold(describe, [], 0.0, None)
        descriptions.step()
    assert made == [0.125, 0.625, 1.125]


# -- a capture panel in a training loop: every call captured, descriptions throttled (the
# -- widget modules' clock moved by the test) ---------------------------------------------------


class FakeClock:
    """Stands in for ``time`` in the widget module: the test moves it; describing costs no time."""

    def __init__(self):
        self.t = 1000.0

    def monotonic(self):
        return self.t

    def perf_counter(self):
        return self.t


@pytest.mark.needs_flax("nnx.capture")
def test_track_keeps_every_call_but_describes_at_most_max_rate_times_a_second(model, monkeypatch):
    import nnx_lab.core.capture._capture as core_capture  # where Capture.pending_report finds it
    import nnx_lab.widgets._describing as widget_describing
    import nnx_lab.widgets.capture as widget

    clock = FakeClock()
    monkeypatch.setattr(widget, "time", clock)
    monkeypatch.setattr(widget_describing, "time", clock)
    dispatched = []

    class Counted(core_capture.PendingCaptureReport):
        def __init__(self, *args, **kwargs):
            dispatched.append(clock.t)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(core_capture, "PendingCaptureReport", Counted)
    panel = capture_panel(model, max_rate=2.0, display=False)  # at most one description per 0.5 s
    shown = []
    panel.observe(lambda change: shown.append(change["new"]), names="report")
    steps = 20
    for step in panel.track(range(steps)):
        clock.t += 0.1
        panel(X + step)
        # every call's own values are at hand at once, described or not
        act = panel.captured["b0"]["act"].get_value()[0]
        np.testing.assert_allclose(act, model.b0.linear(X + step), rtol=1e-6)
    # Descriptions were dispatched 0.5 s apart at most (the first call's at once), each shown once
    # its numbers had arrived (at a later call, never waited for), and the loop's end showed the last.
    in_loop = dispatched[:-1]  # the last: the loop's end
    assert 3 <= len(in_loop) <= steps // 5 and np.diff(in_loop).min() >= 0.5 - 1e-9
    assert len(shown) == len(dispatched)
    assert panel.status["calls"] == steps
    last = model.b0.linear(X + steps - 1)
    assert panel.last_report.snapshot["b0.act[0]"].stats["mean"] == pytest.approx(float(last.mean()), rel=1e-5)


@pytest.mark.needs_flax("nnx.capture")
def test_a_loop_broken_off_still_shows_its_last_call(model, monkeypatch):
    import nnx_lab.widgets._describing as widget_describing
    import nnx_lab.widgets.capture as widget

    clock = FakeClock()
    monkeypatch.setattr(widget, "time", clock)
    monkeypatch.setattr(widget_describing, "time", clock)
    panel = capture_panel(model, display=False)
    with pytest.raises(KeyboardInterrupt):
        for step in panel.track(range(10)):
            panel(X + step)
            if step == 3:
                raise KeyboardInterrupt
    assert panel.status["calls"] == 4
    mean = panel.report["snapshot"]["stats"]["mean"][row_paths(panel.report["snapshot"]).index("b0.act[0]")]
    assert mean == pytest.approx(float(model.b0.linear(X + 3).mean()), rel=1e-3)  # shown to 4 digits


@pytest.mark.needs_flax("nnx.capture")
def test_outside_track_every_call_is_shown_at_once(model, monkeypatch):
    import nnx_lab.widgets._describing as widget_describing
    import nnx_lab.widgets.capture as widget

    still = FakeClock()  # no time passes between calls
    monkeypatch.setattr(widget, "time", still)
    monkeypatch.setattr(widget_describing, "time", still)
    panel = capture_panel(model, display=False)
    shown = []
    panel.observe(lambda change: shown.append(change["new"]), names="report")
    for step in range(3):
        panel(X + step)
    assert len(shown) == 3


@pytest.mark.needs_flax("nnx.capture")
def test_in_a_notebook_a_second_call_in_one_cell_waits_for_the_throttle_or_the_cell_end(model, monkeypatch):
    import nnx_lab.widgets._describing as widget_describing
    import nnx_lab.widgets.capture as widget

    clock = FakeClock()
    cell = [7]
    monkeypatch.setattr(widget, "time", clock)
    monkeypatch.setattr(widget_describing, "time", clock)
    monkeypatch.setattr(widget.cell_hooks, "current_cell", lambda: cell[0])
    panel = capture_panel(model, display=False)
    shown = []
    panel.observe(lambda change: shown.append(change["new"]), names="report")
    for step in range(10):  # a loop in one cell, without track(): 0.1 s a step
        clock.t += 0.1
        panel(X + step)
    assert len(shown) == 2  # the first call, and one 0.5 s later
    panel._after_cell()  # what the post_run_cell hook does: the last call is shown
    assert len(shown) == 3 and panel.status["calls"] == 10
    mean = panel.report["snapshot"]["stats"]["mean"][row_paths(panel.report["snapshot"]).index("b0.act[0]")]
    assert mean == pytest.approx(float(model.b0.linear(X + 9).mean()), rel=1e-3)
    cell[0] = 8
    panel(X)  # the first call of the next cell is shown at once
    assert len(shown) == 4
