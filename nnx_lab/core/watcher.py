"""Keep a model's snapshot current while it trains, at almost no cost to the loop.

A :class:`Watcher` holds the model by weak reference (``del model`` frees its device
memory even while a viewer is on screen) or follows a name (``_target.py``), refreshes at
most ``max_rate`` times a second *and* at most once per ``1 / budget`` times its own cost
(so refreshing never takes more than ``budget`` of the wall-clock time), and never raises
into the caller: a failed refresh becomes a status.

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
import sys
import time
from typing import Any, Callable, Iterable, Iterator, TypeVar

import jax

from ._gc import paused_gc
from ._text import one_line
from .live._engine import MAX_IN_FLIGHT, Refresher
from .live._history import History
from .live._target import watch_target
from .live._throttle import Throttle
from .snapshot._layers import check_layers
from .snapshot._layers import expand as expand_layers
from .snapshot._snapshot import PendingSnapshot, Snapshot, Unchanged
from .snapshot._structure import StructureCache
from .stats._stats import Deferred, kernel_cache_size
from .training._alert import NonfiniteAlert
from .training._scalars import ScalarStore
from .training._series import SeriesStore, is_optimizer

T = TypeVar("T")

__all__ = ["MAX_IN_FLIGHT", "Watcher"]
logger = logging.getLogger("nnx_lab")


class Watcher:
    """A model's snapshot kept current: a :class:`~nnx_lab.core.live.Refresher` (throttle, in-flight
    queue, threads; its docstring is the threading model) whose work is a :class:`PendingSnapshot`
    of the target, with the training series, scalars, NaN/Inf alert and history beside it."""

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
        # Gradients and optimizer state beside the rows; watch(optimizer) alone: its state is its rows.
        # updates: the update ratio ‖θₜ − θₜ₋₁‖/‖θₜ₋₁‖ (holds one step's parameters after a tick's refresh).
        self.series = (
            SeriesStore(obj, state=False, updates=updates)
            if optimizer is None and is_optimizer(obj)
            else SeriesStore(optimizer, updates=updates)
        )
        throttle = Throttle(max_rate, budget, what="refreshes")
        self.max_rate, self.budget, self.stats = throttle.max_rate, throttle.budget, stats
        self.engine = Refresher(throttle, self._dispatch, self._publish, processes=jax.process_count(), clock=clock)
        self.history = History(history)
        self.snapshot: Snapshot | None = None
        self.snapshot_step = 0  # the step (ticks so far) at which the published snapshot was dispatched
        self.state = "waiting"  # waiting | live | error | missing (a followed name: no model now) | gone
        self.message = ""  # what the last refresh said (an error); replaced by the next one
        self.note = ""  # a standing remark (background refresh unavailable) that every status keeps
        self.refreshes, self.last_refresh = 0, None  # last_refresh: epoch seconds
        self.cost_s: float | None = None  # the host's time for the last refresh
        # The device's time for one refresh, measured where its results were waited for (a cell's end, a
        # forced refresh); a loop's refreshes are throttled by it too: the statistics share the device.
        self.device_s: float | None = None
        self._in_tick = False
        self._listeners: list[Callable[[Watcher], None]] = []
        self._listener_error = ""  # the last listener failure logged (at warning level once)
        self._between_steps = between_steps  # run first by every tick (the UI applies queued clicks there)
        self._compiled = 0
        self._structure = StructureCache()  # walked once, reused while unchanged (no array or Variable)
        self.scalars = ScalarStore()  # tick(loss=...) / log(...): read when a refresh is published
        self.alert = NonfiniteAlert()  # the first NaN/Inf seen (step, refresh, where), kept until cleared
        self._last_refs: list | None = None  # weak references to what the last dispatched refresh reduced
        # What to describe (live/_target.py): the object by weak reference, a (graphdef, state) pair, or
        # a name followed in a namespace. A TypeError here for a non-model.
        self._target = watch_target(obj, on_gone=self._mark_gone)
        # Stacked Variables' layer axes, checked against the model now (a bad declaration raises here).
        self._layers = check_layers(self._target.resolve(), layers)

    # -- what the UI listens to, and the engine's settings -------------------------
    def subscribe(self, listener: Callable[[Watcher], None]) -> None:
        self._listeners.append(listener)

    def _notify(self, _finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        if _finalizing():  # the model collected at exit: modules are torn down (bound early), nobody listens
            return
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception as e:  # noqa: BLE001 - a boundary: a broken display must not break the training loop
                said = one_line(e)
                level = logging.DEBUG if said == self._listener_error else logging.WARNING  # said once
                logger.log(level, "nnx_lab: a viewer failed to show a refresh: %s", said, exc_info=True)
                self._listener_error = said

    @property
    def target(self) -> Any | None:
        return self._target.resolve()

    @property
    def interval(self) -> float:
        """Seconds between throttled refreshes: from ``max_rate`` and the cost budget."""
        return self.engine.throttle.interval

    @property
    def ticks(self) -> int:
        """Steps so far (calls of :meth:`tick`): the step numbers of scalars and of the NaN/Inf alert."""
        return self.engine.ticks

    @property
    def publish_from_thread(self) -> bool:
        """Whether a thread may publish (set by the viewer where the kernel delivers its messages)."""
        return self.engine.publish_from_thread

    @publish_from_thread.setter
    def publish_from_thread(self, value: bool) -> None:
        self.engine.publish_from_thread = value

    # -- refreshing: the engine dispatches and publishes ----------------------------
    def refresh(self, *, force: bool = False, wait: bool | None = None, skip_unchanged: bool = False) -> bool:
        """Refresh unless throttled (or ``force``); whether a snapshot was published. See
        :meth:`Refresher.refresh`; ``skip_unchanged`` (a cell's end, the background thread): nothing
        is launched when the model holds the very arrays, in the same structure, that the last
        refresh reduced, nothing was logged since and nothing is in flight."""
        return self.engine.refresh(force=force, wait=wait, skip_unchanged=skip_unchanged)

    def wait(self) -> None:
        """Publish the refreshes in flight, waiting for the device (tests, scripts)."""
        self.engine.wait()

    @paused_gc()  # no full collection of the user's heap for our temporaries (see paused_gc)
    def show_rows_first(self) -> None:
        """Publish the rows alone at once (nothing runs on the device, nothing compiles), so a new
        viewer shows its table before its kernels are compiled; not counted as a refresh."""
        obj = self._target.resolve()
        if obj is None:
            return
        try:
            with self.engine.lock:
                if self.snapshot is None:
                    self.snapshot = PendingSnapshot(obj, stats=False, structure=self._structure, layers=self._layers)
                    self.snapshot = self.snapshot.finish()
        except Exception:  # noqa: BLE001 - the refresh that follows says what is wrong
            logger.debug("nnx_lab: the rows could not be shown first", exc_info=True)
            return
        finally:
            del obj
        self._notify()

    def variable_count(self) -> int:
        """How many rows the watched object has now (0 when it is gone or cannot be described)."""
        obj = self._target.resolve()
        try:
            with self.engine.lock:
                return 0 if obj is None else len(self._structure.describe(obj, stats=False).rows)
        except Exception:  # noqa: BLE001 - the refresh that follows says what is wrong
            logger.debug("nnx_lab: the rows could not be counted", exc_info=True)
            return 0
        finally:
            del obj

    @paused_gc()
    def _dispatch(self, defer: bool, skip_unchanged: bool) -> PendingSnapshot | None:
        obj = self._target.resolve()
        if obj is None:
            self._mark_gone() if self._target.final else self._mark_missing(self._target.problem)
            return None
        if self.state == "missing":  # the name holds a model again: live once this refresh is published
            self.state, self.message = "waiting", ""
        self._compiled = kernel_cache_size()
        quiet = self.state == "live" and not self.engine.in_flight and not self.scalars.pending
        same = self._last_refs if skip_unchanged and quiet else None
        problems = None if same is None else {k: list(v) for k, v in self.series.problems.items()}
        try:
            series = self.series.take(self.engine.ticks, tick=self._in_tick)
            pending = PendingSnapshot(
                obj, stats=self.stats, repeated=True, defer=defer, structure=self._structure,
                series=series, layers=self._layers, unless_same=same,
            )  # fmt: skip
        except Unchanged:  # the last refresh's statistics stand
            if self.series.problems != problems:  # a followed optimizer's name now holds something else
                self._notify()
            return None
        except Deferred:  # its one-launch program is compiling: try again at the next interval
            if any(self.series.problems.values()):
                self._notify()  # bad input to this refresh: said now, not after the compile
            return None
        except Exception as e:  # noqa: BLE001 - a boundary: deleted mid-step, a model gone odd: said, goes on
            self._fail(e)
            return None
        finally:
            del obj
        self._last_refs = pending.array_refs
        return pending

    @paused_gc()
    def _publish(self, newest: PendingSnapshot, dropped: list, step: int, wait: bool, arrived: bool) -> bool:
        try:
            logged = next((p for p in reversed(dropped) if p.logged), None)
            if logged is not None and not newest.logged:
                # A dropped refresh had gradients the newest lacks (a loop's last tick, then the cell's
                # end refresh): the newest shows them, marked with their step, instead of older ones.
                old = logged.finish()
                self.series.published(old.series, len(old))
            newest.wait()
            measured = newest.device_time() if arrived else None
            self.device_s = self.device_s if measured is None else measured
            snap = newest.finish()
        except Exception as e:  # noqa: BLE001 - a boundary: the refresh's failure is its status
            self._fail(e)
            return False
        snap.series = self.series.published(snap.series, len(snap))
        self.cost_s = newest.host_s + self.series.updates.take_host_s()  # the update ratio's launches count
        if kernel_cache_size() == self._compiled:  # a refresh that compiled says nothing of the next
            self.engine.throttle.cost(self.cost_s + (self.device_s or 0.0))
        self.snapshot, self.snapshot_step = snap, step
        self.history.append(snap)
        self.refreshes += 1
        self.last_refresh = time.time()
        self.scalars.collect(wait=wait)  # the scalars logged so far that have arrived (all, waiting)
        scalar, now = self.scalars.take_nonfinite(), self.scalars.nonfinite_now()
        self.alert.observe(snap, refresh=self.refreshes, step=step, scalar=scalar, scalars_now=now)
        if self.state not in ("gone", "missing"):  # a refresh dispatched before the model went says so
            self.state, self.message = "live", ""
        self._notify()
        return True

    def _fail(self, error: Exception) -> None:
        """A refresh failed: its status says so, and the log once per distinct message."""
        message = one_line(error)
        if (self.state, self.message) != ("error", message):
            logger.warning("nnx_lab: a refresh failed: %s", message, exc_info=error)
        self.state, self.message = "error", message
        self._notify()

    # -- a training loop ---------------------------------------------------------------
    def log(self, *, grads: Any = None, updates: Any = None, **scalars: Any) -> None:
        """Record for the current step (the one the next :meth:`tick` ends), without refreshing:
        scalars (``loss=loss``: kept unsynced, read when a refresh is published; a later value in the
        same step replaces the earlier) and ``grads``/``updates`` (matched to the Variables by path,
        kept by reference, reduced with the parameters if that tick refreshes). Never raises: bad
        input is not recorded and the status says so."""
        if scalars:
            self.scalars.log(self.engine.ticks + 1, scalars)
        if grads is not None or updates is not None:
            self.series.log(self.engine.ticks + 1, grads, updates)

    def tick(self, *, grads: Any = None, updates: Any = None, **scalars: Any) -> bool:
        """Call once per training step: refreshes when the throttle allows (``log(...)`` first)."""
        self.log(grads=grads, updates=updates, **scalars)
        return self._tick()

    def _tick(self, last: bool = False) -> bool:
        # last: the loop's last step, whose end refresh follows at once and takes its gradients.
        self.engine.ticks += 1
        if self.series.updates.holding:  # the step after a refresh: ‖θₜ − θₜ₋₁‖ on the device
            self._advance_updates()
        if self._between_steps is not None:
            try:
                self._between_steps()
            except Exception:  # noqa: BLE001 - a boundary: the UI's queued clicks must not stop the loop
                logger.warning("nnx_lab: applying the viewer's queued changes failed", exc_info=True)
        if last:
            return False
        # What this step logged and its refresh did not take is kept (by reference) until the next
        # step logs again: a manual tick() loop's last step's gradients reach the cell's end refresh.
        self._in_tick = True
        try:
            return self.refresh()
        finally:
            self._in_tick = False

    def _advance_updates(self) -> None:
        obj = self._target.resolve()
        try:
            if obj is not None:  # the rows as a refresh has them (a stacked Variable's layers included)
                rows = expand_layers(self._structure.describe(obj), self._layers)
                self.series.updates.advance(rows, self.engine.ticks)
        except Exception:  # noqa: BLE001 - a model gone odd: the refresh says what
            logger.debug("nnx_lab: the update ratio could not advance", exc_info=True)
            self.series.updates.release()
        finally:
            del obj

    def track(self, iterable: Iterable[T]) -> Iterator[T]:
        """``for batch in watcher.track(batches): ...`` — ticks after each step, refreshes at the end."""
        try:
            items = iter(iterable)
            done = object()
            item = next(items, done)
            while item is not done:
                yield item
                item = next(items, done)
                self._tick(last=item is done)  # the last step's gradients reach the refresh below
        finally:  # where a thread may publish them, the loop's end does not wait for the device either
            self.refresh(force=True, wait=not self.publish_from_thread)

    def start_background(self) -> None:
        if not self.engine.start_background(lambda: self.state == "gone"):
            self.note = (
                f"background refresh unavailable with {jax.process_count()} processes (they must refresh "
                f"together); refreshing every {self.engine.lockstep_every} ticks and after each cell"
            )

    def stop_background(self) -> None:
        self.engine.stop_background()

    # -- the model went away; what the status says -----------------------------------------
    def _mark_missing(self, problem: str) -> None:
        """A followed name holds no model now: say so; the next refresh looks again."""
        if (self.state, self.message) != ("missing", problem):
            self.state, self.message = "missing", problem
            self._notify()

    def _mark_gone(self) -> None:
        self._structure.clear()
        if self.state != "gone":
            self.state, self.message = "gone", self._target.problem or "the model was garbage-collected"
            self.engine.stop_background()
            self._notify()

    def clear_alert(self) -> None:
        """Forget the NaN/Inf alert; the next refresh that sees a NaN/Inf sets it again."""
        self.alert.clear()  # no lock: a refresh waiting for the device must not hold up the click
        self._notify()

    def status(self) -> dict:
        series = [p for problems in self.series.problems.values() for p in problems][:2]
        name, label = self.series.optimizer_name, self._target.label
        if name is not None:  # "following `model` and its optimizer `opt`"
            label = f"{label} and its optimizer `{name}`" if label else f"following optimizer `{name}`"
        parts = (label, self.message, self.scalars.problem, *series, self.note)
        ms = lambda s: None if s is None else round(s * 1e3, 2)  # noqa: E731
        return {
            "state": self.state,
            "message": "; ".join(m for m in parts if m),
            "last_refresh": self.last_refresh,
            "cost_ms": ms(self.cost_s),
            "device_ms": ms(self.device_s),
            "refreshes": self.refreshes,
            "interval_s": round(self.interval, 3),
        }
