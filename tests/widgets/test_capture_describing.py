"""The capture panel's descriptions run on the live-refresh engine (issue 26): a loop's end does not
wait for the device where a thread may publish, a failing description is a status and one log line,
and the engine's throttle runs on an injected clock."""

from __future__ import annotations

import logging
import threading

import jax.numpy as jnp
import pytest
from flax import nnx

import nnx_lab.widgets._describing as describing
from nnx_lab.core.live import Pending, Throttle
from nnx_lab.widgets.capture import capture_panel


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
