"""Widget messages queued while a cell runs: one that fails is logged, and the others still run; where
the kernel cannot read clicks while a cell runs (Colab's ipykernel 6.17: no subshells), a panel says so.

Reaches inside ``nnx_lab._ipython.busy_queue`` (why this file may): the queue is fed and drained
directly, and the kernel's routing answer is replaced, since only a running ipykernel 7 kernel with
subshells gives the routed answer.
"""

import logging

from flax import nnx

from nnx_lab._ipython import busy_queue
from nnx_lab.widgets import views

_alive = []  # the widgets hold their models weakly


def model():
    m = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    _alive.append(m)
    return m


def test_a_failing_queued_message_is_logged_and_the_others_run(caplog):
    ran = []

    def broken():
        raise ValueError("a broken handler")

    busy_queue.post(lambda: ran.append(1))
    busy_queue.post(broken)
    busy_queue.post(lambda: ran.append(3))
    with caplog.at_level(logging.WARNING, logger="nnx_lab"):
        assert busy_queue.drain() == 3
    assert ran == [1, 3]
    [record] = [r for r in caplog.records if r.name == "nnx_lab"]
    assert "queued while a cell ran failed" in record.getMessage()
    assert record.exc_info[0] is ValueError
    assert busy_queue.pending() == 0


def test_without_subshells_a_pending_click_says_it_waits_for_the_cell(monkeypatch):
    # Colab's ipykernel 6.17 has no subshells: route_while_busy gives the reason, the panel says so.
    monkeypatch.setattr(busy_queue, "route_while_busy", lambda widget: "needs ipykernel 7 subshells")
    panel = views.mode_toggle(model(), display=False)
    assert panel.busy_note == busy_queue.busy_note("needs ipykernel 7 subshells")
    assert "running cell to end" in panel.busy_note
    monkeypatch.setattr(busy_queue, "route_while_busy", lambda widget: None)
    assert views.mode_toggle(model(), display=False).busy_note == ""
