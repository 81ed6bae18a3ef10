"""Python's cyclic garbage collector paused around a walk or a refresh of a large model."""

from __future__ import annotations

import contextlib
import gc
import threading

_gc_lock = threading.Lock()
_gc_pausing = 0  # how many paused_gc blocks are running (any thread)
_gc_resume = False  # whether the last of them turns the collector back on


@contextlib.contextmanager
def paused_gc():
    """Python's cyclic garbage collector off for the block (as it was after it; blocks may nest and
    run on several threads at once).

    A walk or a refresh of a large model makes hundreds of thousands of short-lived objects that
    reference counting frees; each time enough of them are alive at once the collector runs, and
    its full collections traverse every object of the process (a 100,000-Variable model is a
    million objects: seconds each). Nothing a snapshot makes is cyclic garbage."""
    global _gc_pausing, _gc_resume
    with _gc_lock:
        if _gc_pausing == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pausing += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausing -= 1
            if _gc_pausing == 0 and _gc_resume:
                gc.enable()
