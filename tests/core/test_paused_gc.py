"""The cyclic collector is off while a snapshot is taken and back as the user had it afterwards."""

import gc
import threading

import pytest
from flax import nnx

import nnx_lab

# Reaches inside core (why this file may): the paused collector is a process-wide side effect of a walk;
# its nesting across threads is checked on paused_gc itself, and the walk is spied on where it runs.
from nnx_lab.core._gc import paused_gc


@pytest.fixture
def gc_restored():
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


def test_snapshot_runs_without_the_collector_and_restores_it(gc_restored, monkeypatch):
    seen = []
    from nnx_lab.core.snapshot import _structure

    real = _structure.walk_graph
    monkeypatch.setattr(_structure, "walk_graph", lambda obj: (seen.append(gc.isenabled()), real(obj))[1])
    gc.enable()
    snap = nnx_lab.snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    assert seen == [False] and gc.isenabled() and snap["kernel"].stats["norm"] > 0
    gc.disable()  # a user who turned it off keeps it off
    nnx_lab.snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    assert not gc.isenabled()


def test_nested_and_failing_blocks_restore_the_collector(gc_restored):
    gc.enable()
    with pytest.raises(ZeroDivisionError):
        with paused_gc():
            with paused_gc():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer block is still running
            1 / 0
    assert gc.isenabled()


def test_overlapping_blocks_on_two_threads(gc_restored):
    gc.enable()
    inside, leave = threading.Event(), threading.Event()

    def other():
        with paused_gc():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with paused_gc():
        pass
    assert not gc.isenabled()  # the other thread's block still runs
    leave.set()
    t.join()
    assert gc.isenabled()
