"""The whole program's peak memory (XLA's memory analysis), computed when first asked for.

XLA reports peak memory only for a compiled program, and compiling the whole call costs several
times the trace and the costs together (4 s against 1.3 s for the reference transformer on CPU).
So :func:`~nnx_lab.core.summary.summary` keeps the traced program and compiles it only when the
numbers are wanted: ``Summary.memory`` (blocking, once), or :meth:`PeakMemory.start` (a background
thread: the widget shows the table at once and the peak-memory line when the compile is done).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

import jax

_log = logging.getLogger("nnx_lab")

NOT_COMPUTED = "not computed: memory=False / --no-memory"
PENDING = "computing (XLA's memory analysis compiles the whole program once)…"


def analyse(traced: jax.stages.Traced) -> tuple[dict | None, str | None]:
    """``(memory, None)`` from XLA's memory analysis of ``traced``, or ``(None, why not)``."""
    try:
        lowered = traced.lower()
        try:  # compiled for the analysis only: LLVM's optimisations change no buffer (half the CPU compile time)
            compiled = lowered.compile(compiler_options={"xla_backend_optimization_level": 0})  # pyright: ignore[reportArgumentType] - XLA takes an int (jax's stub: str | bool)
        except Exception as e:  # noqa: BLE001 - boundary: a backend that does not take the option: its default compile
            _log.debug("nnx_lab.summary: compiling without optimization refused (%s): default compile", e)
            compiled = lowered.compile()
        analysis = compiled.memory_analysis()
    except Exception as e:  # noqa: BLE001 - a backend without compile or memory analysis: said in the header
        from ..text import one_line

        return None, one_line(e)
    if analysis is None:
        return None, f"{jax.default_backend()} has no memory analysis"
    fields = (
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "temp_size_in_bytes",
        "alias_size_in_bytes",
        "generated_code_size_in_bytes",
    )
    out = {f.replace("_size_in_bytes", ""): int(getattr(analysis, f, 0) or 0) for f in fields}
    out["peak"] = out["argument"] + out["output"] + out["temp"] - out["alias"]
    return out, None


class PeakMemory:
    """XLA's peak memory of one traced program: computed once, on first :meth:`result` or :meth:`start`.

    ``PeakMemory(None, note)`` is one that will not be computed (``memory=False``): ``note`` says why.
    """

    def __init__(self, traced: jax.stages.Traced | None = None, note: str = NOT_COMPUTED):
        self._traced = traced
        self._result: tuple[dict | None, str | None] | None = None if traced is not None else (None, note)
        self._lock = threading.Lock()
        self._waiting: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None
        self.seconds: float | None = None  # how long the compile and analysis took

    @property
    def ready(self) -> bool:
        return self._result is not None

    def result(self) -> tuple[dict | None, str | None]:
        """``(memory, note)``; compiles the program now if nothing has yet (blocks meanwhile)."""
        with self._lock:
            if self._result is None:
                started = time.perf_counter()
                self._result = analyse(self._traced)  # pyright: ignore[reportArgumentType] - no result yet: a traced program
                self.seconds = time.perf_counter() - started
                self._traced = None  # the program is compiled once: let its trace go
            return self._result

    def start(self, done: Callable[[], None]) -> None:
        """Compute on a background thread and call ``done()`` there when ready (now when it already is)."""
        with self._lock:
            if self._result is None:
                self._waiting.append(done)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="nnx_lab-summary-memory", daemon=True)
                    self._thread.start()
                return
        _call(done)

    def _run(self) -> None:
        self.result()
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for done in waiting:
            _call(done)


def _call(done: Callable[[], None]) -> None:
    try:
        done()
    except Exception:  # a boundary: a display that could not be updated must not kill the thread silently
        _log.exception("nnx_lab: showing the summary's peak memory failed")
