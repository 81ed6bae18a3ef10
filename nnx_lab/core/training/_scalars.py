"""Scalars logged in a training loop (``loss``, ``lr``): kept without syncing, read with the statistics
(docs/guide/watch.md: every step gets a point, at most :data:`MAX_POINTS` per name).

:meth:`ScalarStore.log` keeps the device scalar itself: no copy, no wait, no transfer started
(``copy_to_host_async`` of a value not computed yet cost ~125 µs per step, a few per cent of a small
model's step). :meth:`collect`, called when a refresh is published, reads the values whose
``is_ready()`` is True, oldest first, in one ``jax.device_get``; should :data:`MAX_PENDING` pile up
(refreshes held back while a program compiles) a log reads those already computed, never waiting.
Every value read is checked for NaN/Inf before the curve can thin it away. Bad input never raises
into the loop: it is a :attr:`problem`, names quoted to :data:`~nnx_lab.core.text.ECHO_CHARS`
characters, at most :data:`MAX_NAMES` names' problems kept, the others counted.

>>> import jax.numpy as jnp
>>> store = ScalarStore()
>>> for step in range(1, 4):
...     store.log(step, {"loss": jnp.float32(1.0 / step), "lr": 0.1})
>>> store.log(3, {"loss": jnp.ones(2)})
>>> store.collect(wait=True)
True
>>> store.names, store.latest("loss")
(['loss', 'lr'], (3, 0.3333333432674408))
>>> store.problem
'loss: not a scalar (shape (2,)); not recorded'
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

import jax
import numpy as np

from ..text import one_line, quote
from ._scalar_values import Curve, accept
from ._scalar_values import host_values as _host_values  # a module global: tests count the reads

logger = logging.getLogger("nnx_lab")

#: Points each name keeps on the host (evenly spread over its steps once it has more).
MAX_POINTS = 256
#: Device scalars of one name waiting to be read before a tick reads the ones already computed.
MAX_PENDING = 4096
#: Names a store records; more are refused with a problem.
MAX_NAMES = 32
_COUNTED = 100_000  # distinct refused names counted beyond those named in the problem


class ScalarStore:
    """Scalars by name over steps; see the module's docstring. Thread-safe (a loop logs while a
    publisher thread collects)."""

    def __init__(self, points: int = MAX_POINTS):
        self.points = points
        self.version = 0  # bumped whenever a curve or latest value changed
        self._series: dict[str, Curve] = {}
        self._pending: dict[str, list[tuple[int, Any]]] = {}  # the user's values: a device scalar or a float
        self._problems: dict[str, list] = {}  # name -> [message, shown]
        self._refused_more: set[int] = set()  # hashes of names refused beyond MAX_NAMES problems (counted)
        self._nonfinite: tuple[int, str, float] | None = None  # earliest NaN/Inf read since taken
        self._lock = threading.Lock()

    # -- recording (the training loop's thread) ------------------------------------------------
    def log(self, step: int, scalars: dict[str, object]) -> None:
        """Record ``scalars`` (name -> device scalar or number) for ``step``. Never raises, never waits."""
        with self._lock:
            for name, value in scalars.items():
                name = quote(name)  # a name is shown, sent and kept: a 1 MB one is cut (its length said)
                if name not in self._pending and len(self._pending) >= MAX_NAMES:
                    self._refuse(name, f"more than {MAX_NAMES} scalars")
                    continue
                try:
                    value, problem = accept(value)
                except Exception as e:  # noqa: BLE001 - a boundary (the loop's log()): a user number's method raised
                    logger.debug("nnx_lab: a logged scalar could not be read", exc_info=True)
                    value, problem = None, f"not readable ({one_line(e, 100)})"  # the status says it
                if problem is not None:
                    self._refuse(name, problem)
                    continue
                if name in self._problems and self._problems[name][1]:
                    del self._problems[name]  # shown once, now fixed
                pending = self._pending.setdefault(name, [])
                if pending and pending[-1][0] == step:
                    pending[-1] = (step, value)  # the latest per name and step
                else:
                    pending.append((step, value))
                if len(pending) >= MAX_PENDING:
                    self._read(name)  # only values already computed: no wait
                    if len(pending) >= MAX_PENDING:  # the device is that far behind: every second step
                        pending[:] = pending[-1::-2][::-1]

    def _refuse(self, name: str, why: str) -> None:
        """Keep why ``name`` was not recorded: one problem per name for at most MAX_NAMES names, the
        others counted (10⁶ names logged once each must not make a 45 MB status line)."""
        if name in self._problems or len(self._problems) < MAX_NAMES:
            self._problems[name] = [f"{name}: {why}; not recorded", False]
        else:
            if len(self._refused_more) < _COUNTED:
                self._refused_more.add(hash(name))

    @property
    def pending(self) -> bool:
        """Whether values were logged that no published refresh has read yet."""
        return any(self._pending.values())

    # -- reading (at publish time) ---------------------------------------------------------------
    def collect(self, *, wait: bool = False) -> bool:
        """Read the logged values that have arrived (all of them with ``wait``); True if any changed.
        Problems recorded so far count as shown from here on."""
        if wait:  # outside the lock: the loop's log() never waits for this
            with self._lock:
                arrays = [v for pending in self._pending.values() for _, v in pending if isinstance(v, jax.Array)]
            for array in arrays:
                try:
                    if not array.is_deleted():
                        array.block_until_ready()
                except RuntimeError:  # deleted meanwhile, or its computation failed: said when it is read below
                    logger.debug("nnx_lab: a logged scalar failed on the device", exc_info=True)
            del arrays
        with self._lock:
            before = self.version
            for name in list(self._pending):
                self._read(name)
            for problem in self._problems.values():
                problem[1] = True
            return self.version != before

    def _read(self, name: str) -> None:
        """Read ``name``'s pending values in order, up to the first not yet computed (never waits)."""
        pending = self._pending[name]
        series = self._series.get(name)
        if series is None:
            series = self._series[name] = Curve(self.points)
        # The values computed so far (up to the first that is not), fetched in one transfer.
        ready: list = []
        for step, value in pending:
            if isinstance(value, jax.Array):
                try:
                    if value.is_deleted():  # (is_ready() of a deleted array crashes some jaxlibs)
                        ready.append((step, ValueError("deleted (donated?) before it was read")))
                        continue
                    if not value.is_ready():  # pyright: ignore[reportAttributeAccessIssue] - jax's Array stub lacks is_ready (every jax array has it)
                        break
                except RuntimeError as e:  # the computation that made it failed: said below, as a problem
                    ready.append((step, e))
                    continue
            ready.append((step, value))
        arrays = [v for _, v in ready if isinstance(v, jax.Array)]
        try:
            fetched = iter(_host_values(arrays))
        except RuntimeError:  # a device error: the one that fails says so below, each read alone
            fetched = None
        done = 0
        for step, value in ready:
            done += 1
            try:
                if isinstance(value, Exception):
                    raise value
                if isinstance(value, jax.Array):
                    value = next(fetched) if fetched is not None else _host_values([value])[0]
            except (RuntimeError, ValueError) as e:  # the device's error, or deleted before it was read
                self._problems[name] = [f"{name}: step {step}: {one_line(e)}; not recorded", False]
                continue
            series.add(step, value)
            if not math.isfinite(value) and (self._nonfinite is None or step < self._nonfinite[0]):
                self._nonfinite = (step, name, value)
        if done:
            del pending[:done]
            self.version += 1

    def take_nonfinite(self) -> tuple[int, str, float] | None:
        """The earliest (step, name, value) read with a NaN or Inf since the last call, or None."""
        with self._lock:
            found, self._nonfinite = self._nonfinite, None
            return found

    # -- what is known ------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Names with at least one value read, in the order they were first logged."""
        return [name for name, s in list(self._series.items()) if s.latest is not None]

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps int64[n], values float64[n])`` of ``name``'s curve, oldest first, the latest value last."""
        with self._lock:
            return self._series[name].curve()

    def latest(self, name: str) -> tuple[int, float] | None:
        """``(step, value)`` of the last value read for ``name``."""
        series = self._series.get(name)
        return None if series is None else series.latest

    def nonfinite_now(self) -> list[str]:
        """Names whose latest value is NaN or Inf."""
        return [
            name for name, s in list(self._series.items()) if s.latest is not None and not math.isfinite(s.latest[1])
        ]

    @property
    def problem(self) -> str:
        """What was not recorded, one clause per name ("" when all is well), at most MAX_NAMES clauses."""
        clauses = [message for message, _shown in list(self._problems.values())]
        if self._refused_more:
            n = len(self._refused_more)
            clauses.append(f"{n:,}{'+' if n >= _COUNTED else ''} more names not recorded")
        return "; ".join(clauses)
