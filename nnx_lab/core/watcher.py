"""Keep a model's snapshot current while it trains, at almost no cost to the loop.

A :class:`Watcher` holds the model by weak reference (``del model`` frees its device memory even while
a viewer is on screen) or follows a name (``live/_target.py``), refreshes at most ``max_rate`` times a
second and within ``budget`` of the wall-clock time, and never raises into the caller: a failed refresh
becomes a status.

>>> from flax import nnx
>>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
>>> w = Watcher(model)
>>> w.refresh(force=True), w.state, w.refreshes
(True, 'live', 1)
>>> w.refresh()          # throttled: too soon after the last one
False
>>> del model; import gc; _ = gc.collect()
>>> w.refresh(force=True), w.state
(False, 'gone')
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable, Iterator, TypeVar

import jax
from flax.nnx.graph import is_graph_node

from .live import MAX_IN_FLIGHT, Forward, Listeners, Refresher, SnapshotSource, StatusLine, Throttle
from .training import LastGood, NonFiniteStep, StepGuard, Training

T = TypeVar("T")

__all__ = ["MAX_IN_FLIGHT", "Watcher"]
logger = logging.getLogger("nnx_lab")


class Watcher:
    """A model's snapshot kept current: an ``engine`` (a :class:`~nnx_lab.core.live.Refresher`; its docstring
    is the threading model) whose work is a ``source`` (a :class:`~nnx_lab.core.live.SnapshotSource`), with
    the ``training`` parts (series, scalars, NaN/Inf alert) and the ``status_line`` beside it."""

    # The parts' fields, read and written as the Watcher's own (widgets, tools and tests use them).
    state, message, note, refreshes, last_refresh, cost_s, device_s = (Forward("status_line") for _ in range(7))
    snapshot, snapshot_step, history, stats = (Forward("source") for _ in range(4))
    _structure = Forward("source", "structure")
    series, scalars, alert = (Forward("training") for _ in range(3))
    ticks, publish_from_thread = Forward("engine"), Forward("engine")

    def __init__(
        self,
        obj: Any,
        *,
        max_rate: float = 2.0,
        budget: float = 0.02,
        stats: bool = True,
        history: int = 100,
        between_steps: Callable[[], Any] | None = None,
        optimizer: Any = None,
        updates: bool = True,
        layers: dict | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.training = Training(obj, optimizer, updates=updates)  # gradients, optimizer state, scalars, alert
        throttle = Throttle(max_rate, budget, what="refreshes")
        self.max_rate, self.budget = throttle.max_rate, throttle.budget
        self.status_line, self.listeners = StatusLine(), Listeners(self)
        self.source = SnapshotSource(
            obj, stats=stats, layers=layers, history=history, training=self.training,
            line=self.status_line, notify=self.listeners.notify,
        )  # fmt: skip
        work = self.source.dispatch, self.source.publish
        self.engine = self.source.engine = Refresher(throttle, *work, processes=jax.process_count(), clock=clock)
        self._between_steps = between_steps  # run first by every tick (the UI applies queued clicks there)
        self.guard = StepGuard(self._state_objects)  # stop_on_nonfinite: a loop's NaN/Inf check, kept state

    def subscribe(self, listener: Callable[[Watcher], None]) -> None:
        self.listeners.add(listener)  # called after every change; a broken one is logged, never raised

    @property
    def target(self) -> Any | None:
        return self.source.target.resolve()

    @property
    def interval(self) -> float:  # seconds between throttled refreshes: from max_rate and the cost budget
        return self.engine.throttle.interval

    def refresh(self, *, force: bool = False, wait: bool | None = None, skip_unchanged: bool = False) -> bool:
        """Refresh unless throttled (or ``force``); whether a snapshot was published (see :meth:`Refresher.refresh`).
        ``skip_unchanged``: launch nothing when the model holds the arrays the last refresh reduced."""
        return self.engine.refresh(force=force, wait=wait, skip_unchanged=skip_unchanged)

    def wait(self) -> None:
        self.engine.wait()  # publish the refreshes in flight, waiting for the device (tests, scripts)

    def show_rows_first(self) -> None:
        """Publish the rows alone at once (nothing runs on the device), not counted as a refresh."""
        if self.source.rows_first():
            self.listeners.notify()

    def variable_count(self) -> int:
        return self.source.count()  # rows of the watched object now (0: gone or not describable)

    def log(self, *, grads: Any = None, updates: Any = None, **scalars: Any) -> None:
        """Record for the step the next :meth:`tick` ends: scalars (``loss=loss``, unsynced; the last per
        step) and ``grads``/``updates`` (by reference, matched to the Variables by path). Never raises."""
        self.training.log(self.engine.ticks + 1, grads, updates, scalars)
        self.guard.log(self.engine.ticks + 1, scalars, grads)

    def tick(
        self, *, grads: Any = None, updates: Any = None, stop_on_nonfinite: bool = False,
        keep_last_good: bool = False, **scalars: Any,
    ) -> bool:  # fmt: skip
        """Call once per training step: refreshes when the throttle allows (``log(...)`` first).
        ``stop_on_nonfinite``: see :meth:`track` (the last step is checked by the next such tick)."""
        self._arm(stop_on_nonfinite, keep_last_good)
        self.log(grads=grads, updates=updates, **scalars)
        return self._tick()

    def _tick(self, last: bool = False) -> bool:
        # last: the loop's last step, whose end refresh follows at once and takes its gradients.
        self.engine.ticks += 1
        self.training.advance_updates(self.source.rows, self.engine.ticks)  # ‖θₜ − θₜ₋₁‖ after a refresh
        if self._between_steps is not None:
            try:
                self._between_steps()
            except Exception:  # noqa: BLE001 - a boundary: the UI's queued clicks must not stop the loop
                logger.warning("nnx_lab: applying the viewer's queued changes failed", exc_info=True)
        # What this step logged and its refresh did not take is kept until the next step logs again.
        refreshed = False if last else self.source.in_a_tick(self.refresh)
        try:
            self.guard.tick(self.engine.ticks, last)
        except NonFiniteStep:
            self.listeners.notify()  # the status line says where the loop stopped
            raise
        return refreshed

    def track(
        self, iterable: Iterable[T], *, stop_on_nonfinite: bool = False, keep_last_good: bool = False
    ) -> Iterator[T]:
        """``for batch in watcher.track(batches): ...`` — ticks after each step, refreshes at the end.

        ``stop_on_nonfinite``: raise :class:`NonFiniteStep` within one step of the first step whose
        logged scalars or gradients hold a NaN/Inf (checked on the device, no step waits for its own
        check); ``keep_last_good``: keep the state from before it for :meth:`restore_last_good` (up to
        2 × the model's and optimizer's size on the device). See docs/guide/training.md."""
        if not stop_on_nonfinite:
            if keep_last_good:
                raise ValueError("keep_last_good=True needs stop_on_nonfinite=True")
            return self.engine.track(iterable, lambda last: self._tick(last=last))
        return self._guarded(iterable, keep_last_good)

    def _guarded(self, iterable: Iterable[T], keep_last_good: bool) -> Iterator[T]:
        self._arm(True, keep_last_good, before_step=self.engine.ticks + 1)
        try:
            yield from self.engine.track(iterable, lambda last: self._tick(last=last))
        finally:
            self.guard.disarm()  # a stop's last good state stays, for restore_last_good()

    def _arm(self, on: bool, keep_last_good: bool, before_step: int | None = None) -> None:
        if not on:
            if keep_last_good:
                raise ValueError("keep_last_good=True needs stop_on_nonfinite=True")
            self.guard.disarm()
            return
        model = self.source.target.resolve()
        if keep_last_good and (model is None or not is_graph_node(model)):
            raise ValueError(f"keep_last_good=True needs a model object to copy, not {type(model).__name__}")
        self.guard.arm(keep_last_good, before_step)

    def _state_objects(self) -> tuple[Any, Any]:
        model = self.source.target.resolve()
        return (model if model is not None and is_graph_node(model) else None), self.training.series.optimizer

    @property
    def last_good(self) -> LastGood | None:
        """After a :class:`NonFiniteStep` with ``keep_last_good``: the state from before the bad step."""
        return self.guard.last_good

    def restore_last_good(self) -> int:
        """Put the model and optimizer back as they were before the bad step; that step's number."""
        step = self.guard.restore()
        self.listeners.notify()
        return step

    def start_background(self) -> None:
        if not self.engine.start_background(lambda: self.state == "gone"):
            self.status_line.lockstep(jax.process_count(), self.engine.lockstep_every)

    def stop_background(self) -> None:
        self.engine.stop_background()

    def clear_alert(self) -> None:
        """Forget the NaN/Inf alert; the next refresh that sees a NaN/Inf sets it again."""
        self.training.alert.clear()  # no lock: a refresh waiting for the device must not hold up the click
        self.listeners.notify()

    def status(self) -> dict:
        label = self.training.label(self.source.target.label)
        return self.status_line.to_dict(label, [*self.guard.status(), *self.training.problems()], self.interval)
