"""The update-to-parameter ratio ‖θₜ − θₜ₋₁‖ / ‖θₜ₋₁‖ per Variable (docs/guide/training.md).

A tick's refresh holds its parameter arrays (strong references: no copy) until the next tick, where
one compiled program reduces ``θₜ − θₜ₋₁`` (fused, never stored) and ``θₜ₋₁``; its numbers are
fetched with a later refresh. The program compiles on a thread (until then the update is skipped)
and is kept on disk with the viewer's programs. Donated, several devices one program cannot take
together, or several processes: unavailable, with the reason.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from ..compat import outside_context_mesh
from ..live.threads import start_thread
from ..memo import Memo
from ..stats import compile_program, in_background
from ..text import one_line

__all__ = ["DONATED", "UpdateTracker"]
logger = logging.getLogger("nnx_lab")

DONATED = (
    "update: unavailable (donated): the step deleted the parameters it was given; to see "
    "‖Δθ‖/‖θ‖ don't donate them, or pass the optimizer's updates with viewer.log(updates=...)"
)


def _norm(x):
    """The norm of ``x``, scaled by its largest magnitude (no overflow or underflow of the squares)."""
    s = jnp.max(jnp.abs(x))
    s = jnp.where(jnp.isfinite(s) & (s > 0), s, 1)
    return s * jnp.sqrt(jnp.sum(jnp.square(x / s)))


def _diff_norms(olds, news, layers):
    out = []
    for o, n, layer in zip(olds, news, layers):
        if layer is not None:  # a stacked Variable's layer row: that layer alone
            axis, k = layer
            o, n = jnp.take(o, k, axis=axis), jnp.take(n, k, axis=axis)
        dtype = jnp.promote_types(o.dtype, jnp.float32)
        o, n = o.astype(dtype), n.astype(dtype)
        out.append(jnp.stack([_norm(n - o), _norm(o)]).astype(jnp.float32))
    return jnp.stack(out)


# Not the viewer program's classic CPU emitters (_programs.COMPILER_OPTIONS: they make its variadic
# reduce one loop): for these plain reductions they compile 4.5x slower (48 arrays of an MLP:
# 1.4 s against 0.31 s) and run no faster (4.6 against 4.2 ms); LLVM's expensive passes add nothing.
OPTIONS = ({"xla_llvm_disable_expensive_passes": True}, {})

_compiled: Memo = Memo(64)  # spec of the arrays -> compiled program, or _COMPILING (a program per model structure)
_COMPILING = object()
_lock = threading.Lock()


def _spec(x: jax.Array) -> tuple:
    return (x.shape, x.dtype, getattr(x, "sharding", None))


def _program(olds: tuple, layers: tuple) -> jax.stages.Compiled | Exception | None:
    """The compiled program for arrays like ``olds`` (None while it compiles, on a thread);
    ``layers``: per array, None or the (axis, layer) of a stacked Variable's layer row."""
    key = (tuple(_spec(x) for x in olds), layers)
    with _lock:
        got = _compiled.get(key)
        if got is not None:
            return None if got is _COMPILING else got
        _compiled[key] = _COMPILING
    shapes = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)) for x in olds)

    def compile_it():  # given shapes only: the held arrays are never kept alive by a compile
        try:
            with in_background():  # the user's own compiles come first (see _kernels)
                with outside_context_mesh():
                    lowered = jax.jit(lambda o, n: _diff_norms(o, n, layers)).lower(shapes, shapes)
                program = compile_program(lowered, OPTIONS, shapes)  # on disk when on one device, as a viewer's
        except Exception as e:  # noqa: BLE001 - a boundary (a thread's work): kept, said when the update is asked for
            logger.debug("nnx_lab: the update ratio's program did not compile", exc_info=True)
            program = e
        with _lock:
            _compiled[key] = program

    start_thread(compile_it, "nnx_lab-updates")
    return None


class _Structure(Protocol):
    derived: dict  # what other packages derive from a structure, under their own keys


class Described(Protocol):
    """A model's rows before their statistics and the arrays to reduce for them (``core.snapshot``'s
    ``Described``): what the series and the update ratio read of it."""

    @property
    def rows(self) -> list: ...

    @property
    def live(self) -> list[int]: ...

    @property
    def arrays(self) -> list: ...

    @property
    def structure(self) -> _Structure: ...


class UpdateTracker:
    """One Watcher's held parameters and the update norms on their way (see the module docstring)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled and jax.process_count() == 1
        self._held: tuple | None = None  # (the structure, live rows, arrays, step, layer of each)
        self._pending: tuple | None = None  # (live rows, device result, from step, to step)
        self.problem = ""
        self._host_s = 0.0  # CPU time of advance() since take_host_s(): a refresh's cost for the throttle

    def take_host_s(self) -> float:
        spent, self._host_s = self._host_s, 0.0
        return spent

    def hold(self, described: Described, step: int) -> None:
        """Keep a refresh's parameter arrays (floating ones) until the next tick: nnx.Param (and its
        subclasses), or bare arrays; never another Variable type (batch statistics, an optimizer's
        moments: no learning-rate signal, and holding them would double the memory kept)."""
        if not self.enabled:
            return
        rows = described.rows
        keep = [
            (i, x)
            for i, x in zip(described.live, described.arrays)
            if rows[i].param is not False and isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating)
        ]
        layers = tuple(
            None if getattr(rows[i], "layer_of", None) is None else (rows[rows[i].layer_of].layer_axis, rows[i].layer)
            for i, _ in keep
        )
        self._held = (described.structure, [i for i, _ in keep], [x for _, x in keep], step, layers) if keep else None

    def release(self) -> None:
        self._held = None

    @property
    def holding(self) -> bool:
        return self._held is not None

    def advance(self, described: Described, step: int) -> None:
        """The tick after a refresh: dispatch ‖θₜ − θₜ₋₁‖ and ‖θₜ₋₁‖ for the held arrays, release them."""
        start = time.thread_time()
        try:
            held, self._held = self._held, None
            if held is None:
                return
            structure, rows, olds, step0, layers = held
            if described.structure is not structure:
                return  # the structure changed: nothing to compare
            new_of = dict(zip(described.live, described.arrays))
            news = [new_of.get(i) for i in rows]
            if any(isinstance(x, jax.Array) and x.is_deleted() for x in olds):
                self.problem = DONATED
                return
            if any(n is None or _spec(n) != _spec(o) for o, n in zip(olds, news)):
                return
            try:
                program = _program(tuple(olds), layers)
                if program is None:
                    return  # compiling: the next refresh's tick will have it
                if isinstance(program, Exception):
                    raise program
                result = program(tuple(olds), tuple(news))
                result.copy_to_host_async()
            except Exception as e:  # noqa: BLE001 - a boundary (the loop's tick; a compile's error re-raised): the viewer says why
                logger.debug("nnx_lab: the update ratio could not be launched", exc_info=True)
                self.problem = f"update: unavailable ({one_line(e, 160)})"
                return
            self.problem = ""
            self._pending = (rows, result, step0, step)
        finally:
            self._host_s += time.thread_time() - start

    def collect(self, n_rows: int) -> tuple | None:
        """``(‖Δθ‖ per row, ‖Δθ‖/‖θₜ₋₁‖ per row, step)`` once arrived (never waits), else None."""
        if self._pending is None:
            return None
        rows, result, _, step = self._pending
        try:
            if not result.is_ready():
                return None
            got = np.asarray(jax.device_get(result), np.float64)
        except RuntimeError as e:  # the device's error (deleted, a failed run): the viewer says why
            self._pending, self.problem = None, f"update: unavailable ({one_line(e, 160)})"
            return None
        self._pending = None
        if max(rows, default=-1) >= n_rows:
            return None
        norm, ratio = np.full(n_rows, np.nan), np.full(n_rows, np.nan)
        norm[rows] = got[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio[rows] = np.where(got[:, 1] > 0, got[:, 0] / got[:, 1], np.nan)
        return norm, ratio, step
