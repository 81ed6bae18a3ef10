"""Compiles nnx_lab makes in the background (a viewer's program, the update ratio's) run at the
lowest CPU priority, so that a cell's own jit compiling at the same moment gets the cores first;
the user's thread keeps its priority, and what is compiled works."""

import os
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nnx_lab.core.snapshot import _kernels, _programs
from nnx_lab.core.snapshot._kernels import LOW_PRIORITY, compile_lowered, float_kernel, in_background

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own niceness is Linux's")


class Recording:
    """A lowered computation whose compile records the niceness of the thread that runs it."""

    def __init__(self, lowered):
        self.lowered, self.seen = lowered, []

    def compile(self, **kwargs):
        self.seen.append((os.getpriority(os.PRIO_PROCESS, 0), threading.get_native_id()))
        return self.lowered.compile(**kwargs)


def lowered():
    return jax.jit(lambda x: x * 2).lower(jnp.ones(3))


@linux
def test_background_compile_runs_at_lowest_priority_and_works():
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    rec = Recording(lowered())
    with in_background():
        compiled = compile_lowered(rec, ({},))
    (nice, tid), = rec.seen
    assert nice == max(LOW_PRIORITY, mine) and tid != threading.get_native_id()
    assert os.getpriority(os.PRIO_PROCESS, 0) == mine  # the caller's thread is untouched
    np.testing.assert_array_equal(compiled(jnp.ones(3)), [2, 2, 2])


def test_a_compile_outside_the_background_stays_on_the_callers_thread():
    rec = Recording(lowered())
    compile_lowered(rec, ({},))
    assert rec.seen[0][1] == threading.get_native_id()


def test_a_failing_background_compile_raises_in_the_caller():
    class Broken:
        def compile(self, **kwargs):
            raise RuntimeError("XLA said no")

    with in_background(), pytest.raises(RuntimeError, match="XLA said no"):
        compile_lowered(Broken(), ({},))


@linux
def test_a_viewers_program_compiles_at_lowest_priority(monkeypatch):
    seen = []
    real = _kernels._compile_lowered

    def spy(lowered, options):
        seen.append((threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, 0)))
        return real(lowered, options)

    monkeypatch.setattr(_kernels, "_compile_lowered", spy)
    arrays = [jnp.arange(n, dtype=jnp.float32) + 0.5 for n in (7, 9, 11)]
    key = ("test_compile_yield", tuple(a.shape for a in arrays))
    assert _programs.program_for([float_kernel] * 3, arrays, background=True, eager=True, key=key) is None
    for t in [t for t in threading.enumerate() if t.name == "nnx_lab-program"]:
        t.join(120)
    program = _programs.program_for([float_kernel] * 3, arrays, background=True, eager=True, key=key)
    assert isinstance(program, _programs.Program)
    assert seen and all(name == "nnx_lab-compile-low" and nice >= LOW_PRIORITY for name, nice in seen)
