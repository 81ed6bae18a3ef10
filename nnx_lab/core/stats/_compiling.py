"""Compiling nnx_lab's own programs: XLA's CPU options for a statistics kernel, and background compiles
that wait for the user's own compiles (another thread inside XLA's compile) to end first."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jax

# XLA's CPU compile options for one kernel (a first snapshot's cold time is mostly compiling): the
# same run time, compiled in about half the time (figures: benchmarks/README.md, "Snapshot cost").
CPU_OPTIONS = {"xla_llvm_disable_expensive_passes": True, "xla_cpu_use_fusion_emitters": False}
SMALL_CPU_OPTIONS = dict(CPU_OPTIONS, xla_backend_optimization_level=0)
SMALL_ELEMENTS = 4096


def kernel_options(x, small: int = SMALL_ELEMENTS) -> tuple[dict, ...]:
    """The compile options to try, in order, for a kernel of ``x`` (optimisation level 0 up to
    ``small`` elements; other backends: XLA's defaults)."""
    try:
        cpu = all(d.platform == "cpu" for d in x.sharding.device_set)
    except AttributeError:  # a host value: no sharding to ask, XLA's defaults
        cpu = False
    if not cpu:
        return ({},)
    return (SMALL_CPU_OPTIONS if x.size <= small else CPU_OPTIONS, {})


# Compiles nnx_lab makes in the background (a viewer's program, the update ratio's) never start while
# another thread of the process (the user's cell: a new jit's first call) is inside XLA's compile:
# they wait for it to end (up to YIELD_MAX_S), so the user's compile has the cores to itself. They
# are not run at a lower CPU priority: where training saturates the CPU (the CPU backend), such a
# compile would starve and the viewer would wait for its program for the whole loop.
YIELD_TO_USER_COMPILES = True  # (benchmarks/bench_compile_yield.py compares without)
YIELD_MAX_S = 120.0
YIELD_POLL_S = 0.02
_COMPILE_FRAMES = frozenset({"backend_compile_and_load", "backend_compile", "compile_or_get_cached"})
_background = threading.local()
_log = logging.getLogger("nnx_lab")


@contextlib.contextmanager
def in_background():
    """Background work: it starts (its lowering too) once no other thread is compiling, and
    compiles (:func:`compile_lowered`) made inside wait again for the user's compiles first."""
    _wait_for_others()
    before = getattr(_background, "on", False)
    _background.on = True
    try:
        yield
    finally:
        _background.on = before


def others_compiling() -> bool:
    """Whether a thread other than this one and nnx_lab's own is inside jax's XLA compile now."""
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident == me or names.get(ident, "").startswith("nnx_lab"):
            continue
        depth = 0
        while frame is not None and depth < 400:
            if frame.f_code.co_name in _COMPILE_FRAMES:
                return True
            frame, depth = frame.f_back, depth + 1
    return False


def _wait_for_others() -> None:
    if not YIELD_TO_USER_COMPILES:
        return
    deadline = time.monotonic() + YIELD_MAX_S
    waited = False
    while others_compiling() and time.monotonic() < deadline:
        waited = True
        time.sleep(YIELD_POLL_S)
    if waited:
        _log.debug("nnx_lab: a background compile waited for the user's compile to end")


def compile_lowered(lowered: jax.stages.Lowered, options: tuple[dict, ...]) -> jax.stages.Compiled:  # pyright: ignore[reportReturnType] - options is never empty: the last one refused re-raises
    """``lowered.compile`` with the first set of options the backend accepts (inside
    :func:`in_background`: once the user's own compiles are done)."""
    if getattr(_background, "on", False):
        _wait_for_others()
    for i, opts in enumerate(options):
        try:
            return lowered.compile(compiler_options=opts)
        except RuntimeError:  # jax's XlaRuntimeError: the backend refused an option (INVALID_ARGUMENT)
            if i == len(options) - 1:
                raise
            _log.debug("nnx_lab: compile options %r refused; trying the next set", opts, exc_info=True)
