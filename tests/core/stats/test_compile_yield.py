"""Compiles nnx_lab makes in the background (a viewer's program, the update ratio's) wait while
another thread (the user's cell) is inside XLA's compile, and start once it is done; compiles made
for the user's own call (a first snapshot) never wait; what is compiled works."""

import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# Reaches inside core.stats (why this file may): when a background compile starts against a user's compile
# is timing inside XLA's compile frames; the test stands in for jax's frame and compiles directly.
from nnx_lab.core.stats import _compiling
from nnx_lab.core.stats._compiling import compile_lowered, in_background, others_compiling


class Recording:
    """A lowered computation whose compile records when it ran."""

    def __init__(self, lowered):
        self.lowered, self.at = lowered, []

    def compile(self, **kwargs):
        self.at.append(time.monotonic())
        return self.lowered.compile(**kwargs)


def lowered():
    return jax.jit(lambda x: x * 2).lower(jnp.ones(3))


def backend_compile_and_load(started: threading.Event, release: threading.Event):
    """Stands for jax's own frame of that name: a thread inside it is "compiling"."""
    started.set()
    release.wait(30)


def test_a_background_compile_waits_for_the_users_compile():
    started, release = threading.Event(), threading.Event()
    user = threading.Thread(target=backend_compile_and_load, args=(started, release), name="user-cell")
    user.start()
    started.wait(10)
    assert others_compiling()
    rec, done = Recording(lowered()), []

    def ours():
        with in_background():
            done.append(compile_lowered(rec, ({},)))

    t = threading.Thread(target=ours, name="nnx_lab-program")
    t.start()
    time.sleep(0.3)
    assert rec.at == []  # still waiting: the user's compile is running
    ended = time.monotonic()
    release.set()
    user.join()
    t.join(60)
    assert rec.at and rec.at[0] >= ended
    np.testing.assert_array_equal(done[0](jnp.ones(3)), [2, 2, 2])
    assert not others_compiling()


def test_the_users_own_compiles_never_wait(monkeypatch):
    started, release = threading.Event(), threading.Event()
    other = threading.Thread(target=backend_compile_and_load, args=(started, release))
    other.start()
    started.wait(10)
    try:
        rec = Recording(lowered())
        compile_lowered(rec, ({},))  # not in_background: the caller waits for this compile
        assert len(rec.at) == 1
    finally:
        release.set()
        other.join()


def test_the_wait_is_bounded(monkeypatch):
    monkeypatch.setattr(_compiling, "YIELD_MAX_S", 0.2)
    started, release = threading.Event(), threading.Event()
    other = threading.Thread(target=backend_compile_and_load, args=(started, release))
    other.start()
    started.wait(10)
    try:
        rec = Recording(lowered())
        start = time.monotonic()
        with in_background():
            compile_lowered(rec, ({},))
        assert len(rec.at) == 1 and rec.at[0] - start < 10
    finally:
        release.set()
        other.join()


def test_a_failing_background_compile_raises_in_the_caller():
    class Broken:
        def compile(self, **kwargs):
            raise RuntimeError("XLA said no")

    with in_background(), pytest.raises(RuntimeError, match="XLA said no"):
        compile_lowered(Broken(), ({},))
