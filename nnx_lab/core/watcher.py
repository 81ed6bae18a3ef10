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

import collections
import threading
import time
from typing import Any, Callable, Iterable, Iterator, TypeVar

import jax

from ._util import one_line, paused_gc, start_thread, when_ready
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

#: Refreshes riding the device's queue at once (each holds a few numbers per Variable, no array).
MAX_IN_FLIGHT = 8
POLL_S = 0.01  # a tick asks if a refresh in flight has arrived at most this often (not at every step)


class Watcher:
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
    ):
        # Gradients (tick/log(grads=...)) and the optimizer's state, reduced beside the rows (_series.py).
        # watch(optimizer) alone: its state is its rows; the store adds its step count.
        # updates: the update ratio ‖θₜ − θₜ₋₁‖/‖θₜ₋₁‖ (holds one step's parameters after a tick's refresh).
        self.series = (
            SeriesStore(obj, state=False, updates=updates)
            if optimizer is None and is_optimizer(obj)
            else SeriesStore(optimizer, updates=updates)
        )
        self._in_tick = False
        self._throttle = Throttle(max_rate, budget, what="refreshes")
        self.max_rate, self.budget = self._throttle.max_rate, self._throttle.budget
        self.stats = stats
        self.history = History(history)
        self.snapshot: Snapshot | None = None
        self.snapshot_step = 0  # the step (ticks so far) at which the published snapshot was dispatched
        self.state = "waiting"  # waiting | live | error | missing (a followed name: no model now) | gone
        self.message = ""  # what the last refresh said (an error); replaced by the next one
        self.note = ""  # a standing remark (background refresh unavailable) that every status keeps
        self.refreshes = 0
        self.last_refresh: float | None = None  # epoch seconds
        self.cost_s: float | None = None
        # The device's time for one refresh, measured where its inputs were computed when it was
        # launched and its results were waited for (a cell's end, a forced refresh); a loop's
        # refreshes are throttled by it too: on an accelerator (and on a CPU, where the "device" is
        # the same cores) the statistics share the device with the steps.
        self.device_s: float | None = None
        self._last_attempt = float("-inf")
        self._last_poll = float("-inf")
        self._lock = threading.RLock()
        self._listeners: list[Callable[[Watcher], None]] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._between_steps = between_steps  # run first by every tick (the UI applies queued clicks there)
        self._in_flight: collections.deque[PendingSnapshot] = collections.deque()  # dispatched, not published
        self._compiled = 0
        # The model's structure, walked once and reused while it is unchanged (holds no array or Variable).
        self._structure = StructureCache()
        # Whether a thread may publish (the UI's listeners send widget messages): set by the viewer
        # where the kernel delivers messages from threads. Without it, a forced refresh waits.
        self.publish_from_thread = False
        # A model sharded over several processes (a TPU pod slice, a multi-host GPU group): refreshes
        # at points every process reaches, never by the clock. See refresh().
        self.lockstep = jax.process_count() > 1
        self.lockstep_every = 50  # ticks between refreshes when lockstep
        self._ticks = 0
        self.scalars = ScalarStore()  # viewer.tick(loss=...) / log(...): read when a refresh is published
        self.alert = NonfiniteAlert()  # the first NaN/Inf seen (step, refresh, where), kept until cleared
        self._dispatched_at: dict[PendingSnapshot, int] = {}  # ticks so far when each in flight was dispatched
        self._last_refs: list | None = None  # weak references to what the last dispatched refresh reduced
        # What to describe at each refresh (core/snapshot/_target.py): the object by weak reference, a
        # (graphdef, state) pair, or a name followed in a namespace. A TypeError here for a non-model.
        self._target = watch_target(obj, on_gone=self._mark_gone)
        # Stacked Variables' layer axes, checked against the model now (a bad declaration raises here).
        self._layers = check_layers(self._target.resolve(), layers)

    # -- what the UI listens to ------------------------------------------------
    def subscribe(self, listener: Callable[[Watcher], None]) -> None:
        self._listeners.append(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # a broken display must not break the training loop
                pass

    @property
    def target(self) -> Any | None:
        return self._target.resolve()

    @property
    def interval(self) -> float:
        """Seconds between throttled refreshes: from ``max_rate`` and the cost budget."""
        return self._throttle.interval

    # -- refreshing -------------------------------------------------------------
    # A refresh has two halves: dispatching (describe the Variables, queue the statistics kernels
    # behind the device's work, start the copies of their few numbers to the host) and publishing
    # (once those numbers are there). In a training loop the halves happen at different ticks, so
    # the loop never waits for the device: JAX keeps dispatching steps asynchronously, and the
    # throttle counts the host time nnx_lab spends and the device's time for a refresh (measured
    # where nothing was queued before it), never the time queued steps take.

    def refresh(self, *, force: bool = False, wait: bool | None = None, skip_unchanged: bool = False) -> bool:
        """Refresh unless throttled (or ``force``). Returns whether a snapshot was published.

        ``wait`` (default: ``force``): dispatch and wait for the result now. Without it, refreshes
        in flight are published once their numbers have arrived (at a later call, or by a
        publisher thread where one is allowed), and a new one is dispatched whenever the throttle
        allows: up to :data:`MAX_IN_FLIGHT` ride the device's queue at once, so the viewer keeps
        its rate however deep the queue of training steps is.

        ``skip_unchanged`` (a cell's end, the background thread): nothing is launched when the model
        holds the very arrays, in the same structure, that the last refresh reduced, no gradient or
        scalar was logged since and nothing is in flight: its statistics would be the same.
        """
        wait = force if wait is None else wait
        if not force and not self.lockstep:  # most ticks: nothing due or to publish, said without a lock
            now = time.monotonic()
            due = now - self._last_attempt >= self._throttle.interval and len(self._in_flight) < MAX_IN_FLIGHT
            if not due and (not self._in_flight or now - self._last_poll < POLL_S):
                return False
            self._last_poll = now
        if self.lockstep:
            # Several processes: every one must launch the same kernels in the same order, so a
            # refresh happens only at points all of them reach (every `lockstep_every` ticks, a
            # loop's or cell's end, an explicit call), and waits for its numbers there.
            if not force and self._ticks % self.lockstep_every:
                return False
            force = wait = True
        if not self._lock.acquire(blocking=wait):
            return False  # another thread is refreshing right now
        try:
            # What has arrived is shown now; a refresh that waits supersedes what is still on its way.
            published = self._publish_arrived(wait=False)
            now = time.monotonic()
            if not force and (
                now - self._last_attempt < self._throttle.interval or len(self._in_flight) >= MAX_IN_FLIGHT
            ):
                return published
            self._last_attempt = now
            pending = self._dispatch(defer=not force, skip_unchanged=skip_unchanged)
            if pending is None:
                return published
            if wait or pending.ready():
                return self._publish_arrived(wait=True) or published
            if force and self.publish_from_thread:
                self._publish_when_ready(pending)
            return published
        finally:
            self._lock.release()

    @paused_gc()  # no full collection of the user's heap for our temporaries (see paused_gc)
    def show_rows_first(self) -> None:
        """Publish the rows alone at once (nothing runs on the device, nothing compiles), so a new
        viewer shows its table before its statistics kernels are compiled; the statistics follow with
        the first refresh. Not counted as a refresh; the structure walked here is reused by it."""
        obj = self._target.resolve()
        if obj is None:
            return
        try:
            with self._lock:
                if self.snapshot is None:
                    self.snapshot = PendingSnapshot(
                        obj, stats=False, structure=self._structure, layers=self._layers
                    ).finish()
        except Exception:  # the refresh that follows says what is wrong
            return
        finally:
            del obj
        self._notify()

    def variable_count(self) -> int:
        """How many rows the watched object has now (0 when it is gone or cannot be described): one
        flatten, whose structure the next refresh reuses."""
        obj = self._target.resolve()
        try:
            with self._lock:
                return 0 if obj is None else len(self._structure.describe(obj, stats=False).rows)
        except Exception:  # the refresh that follows says what is wrong
            return 0
        finally:
            del obj

    def wait(self) -> None:
        """Publish the refreshes in flight, waiting for the device (tests, scripts)."""
        with self._lock:
            self._publish_arrived(wait=True)

    @paused_gc()  # no full collection of the user's heap for our temporaries (see paused_gc)
    def _dispatch(self, defer: bool = False, skip_unchanged: bool = False) -> PendingSnapshot | None:
        obj = self._target.resolve()
        if obj is None:
            self._mark_gone() if self._target.final else self._mark_missing(self._target.problem)
            return None
        if self.state == "missing":  # the name holds a model again: live once this refresh is published
            self.state, self.message = "waiting", ""
        self._compiled = kernel_cache_size()
        same = (
            self._last_refs
            if skip_unchanged and self.state == "live" and not self._in_flight and not self.scalars.pending
            else None
        )
        problems = None if same is None else {k: list(v) for k, v in self.series.problems.items()}
        try:
            pending = PendingSnapshot(
                obj,
                stats=self.stats,
                repeated=True,
                defer=defer,
                structure=self._structure,
                series=self.series.take(self._ticks, tick=self._in_tick),
                layers=self._layers,
                unless_same=same,
            )
        except Unchanged:  # the last refresh's statistics stand
            if self.series.problems != problems:  # a followed optimizer's name now holds something else
                self._notify()
            return None
        except Deferred:  # its one-launch program is compiling: try again at the next interval
            if any(self.series.problems.values()):
                self._notify()  # bad input to this refresh: said now, not after the compile
            return None
        except Exception as e:  # deleted mid-step, a model gone odd: say so, go on
            self.state, self.message = "error", one_line(e)
            self._notify()
            return None
        finally:
            del obj
        self._in_flight.append(pending)
        self._dispatched_at[pending] = self._ticks
        self._last_refs = pending.array_refs
        return pending

    @paused_gc()  # no full collection of the user's heap for our temporaries (see paused_gc)
    def _publish_arrived(self, *, wait: bool, upto: PendingSnapshot | None = None) -> bool:
        """Publish the newest refresh whose numbers have arrived (all of them, waiting, with
        ``wait``; up to ``upto``); older ones are dropped unpublished. The caller holds the lock."""
        newest = logged = None
        step = self._ticks
        while self._in_flight and (wait or upto is not None or self._in_flight[0].ready()):
            if newest is not None and newest.logged:
                logged = newest
            newest = self._in_flight.popleft()
            step = self._dispatched_at.pop(newest, step)
            if newest is upto:
                break
        if newest is None:
            return False
        try:
            if logged is not None and not newest.logged:
                # A dropped refresh had gradients the newest lacks (a loop's last tick, then the cell's
                # end refresh): the newest shows them, marked with their step, instead of older ones.
                old = logged.finish()
                self.series.published(old.series, len(old))
            newest.wait()
            measured = newest.device_time() if wait or upto is not None else None  # just arrived
            if measured is not None:
                self.device_s = measured
            snap = newest.finish()
        except Exception as e:
            self.state, self.message = "error", one_line(e)
            self._notify()
            return False
        snap.series = self.series.published(snap.series, len(snap))
        self.cost_s = newest.host_s + self.series.updates.take_host_s()  # the update ratio's launches count too
        if kernel_cache_size() == self._compiled:  # a refresh that compiled says nothing of the next
            self._throttle.cost(self.cost_s + (self.device_s or 0.0))
        self.snapshot = snap
        self.snapshot_step = step
        self.history.append(snap)
        self.refreshes += 1
        self.last_refresh = time.time()
        # The scalars logged so far that have arrived (all of them when waiting anyway), with the statistics.
        self.scalars.collect(wait=wait)
        self.alert.observe(
            snap,
            refresh=self.refreshes,
            step=step,
            scalar=self.scalars.take_nonfinite(),
            scalars_now=self.scalars.nonfinite_now(),
        )
        if self.state not in ("gone", "missing"):  # a refresh dispatched before the model went says so
            self.state, self.message = "live", ""
        self._notify()
        return True

    def _publish_when_ready(self, pending: PendingSnapshot) -> None:
        """A short-lived thread waits for ``pending`` (off the main thread) and publishes it, so the
        end of a cell or of a loop shows the last values without the kernel waiting for them."""

        def publish():
            with self._lock:
                if pending in self._in_flight:
                    self._publish_arrived(wait=False, upto=pending)

        when_ready(pending, publish, name="nnx_lab-publish")

    def log(self, *, grads: Any = None, updates: Any = None, **scalars: Any) -> None:
        """Record, for the current step (the one the next :meth:`tick` ends), without refreshing:
        scalars (``loss=loss``: device scalars kept unsynced, read when a refresh is published, see
        :class:`~nnx_lab.core.snapshot.ScalarStore`; a later value in the same step replaces the
        earlier) and ``grads``/``updates`` (trees matched to the Variables by path, kept by reference,
        reduced with the parameters if that tick refreshes). Never raises: bad input is not recorded
        and the status says so."""
        if scalars:
            self.scalars.log(self._ticks + 1, scalars)
        if grads is not None or updates is not None:
            self.series.log(self._ticks + 1, grads, updates)

    def tick(self, *, grads: Any = None, updates: Any = None, **scalars: Any) -> bool:
        """Call once per training step: refreshes when the throttle allows. ``tick(loss=loss,
        grads=grads)`` is ``log(loss=loss, grads=grads)`` then ``tick()``."""
        self.log(grads=grads, updates=updates, **scalars)
        return self._tick()

    def _tick(self, last: bool = False) -> bool:
        # last: the loop's last step, whose end refresh follows at once: what the step logged
        # (its gradients) is kept for that refresh instead of let go here.
        self._ticks += 1
        if self.series.updates.holding:  # the step after a refresh: ‖θₜ − θₜ₋₁‖ on the device
            obj = self._target.resolve()
            try:
                if obj is not None:
                    # the rows as a refresh has them (a stacked Variable's layers included)
                    self.series.updates.advance(expand_layers(self._structure.describe(obj), self._layers), self._ticks)
            except Exception:  # a model gone odd: the refresh says what
                self.series.updates.release()
            finally:
                del obj
        if self._between_steps is not None:
            try:
                self._between_steps()
            except Exception:
                pass
        if last:  # the loop's end refresh follows at once and never defers: it takes this step's gradients
            return False
        # What this step logged and its refresh did not take is kept (by reference) until the next
        # step logs again: a manual tick() loop's last step's gradients reach the cell's end refresh.
        self._in_tick = True
        try:
            return self.refresh()
        finally:
            self._in_tick = False

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
        finally:
            # The values after the last step; where a thread may publish them, the loop's end
            # does not wait for the device either.
            self.refresh(force=True, wait=not self.publish_from_thread)

    # -- background refreshing ----------------------------------------------------
    def start_background(self) -> None:
        if self.lockstep:
            self.note = (
                f"background refresh unavailable with {jax.process_count()} processes (they must refresh "
                f"together); refreshing every {self.lockstep_every} ticks and after each cell"
            )
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = start_thread(self._run_background, "nnx_lab-watch", stop=self._stop.set)

    def stop_background(self) -> None:
        self._stop.set()

    def _run_background(self) -> None:
        while not self._stop.wait(self._throttle.interval):
            self.refresh(force=True, skip_unchanged=True)
            if self.state == "gone":
                return

    # -- the model went away ----------------------------------------------------------
    def _mark_missing(self, problem: str) -> None:
        """A followed name holds no model now: say so; the next refresh looks again."""
        if (self.state, self.message) != ("missing", problem):
            self.state, self.message = "missing", problem
            self._notify()

    def _mark_gone(self) -> None:
        self._structure.clear()
        if self.state != "gone":
            self.state, self.message = "gone", self._target.problem or "the model was garbage-collected"
            self._stop.set()
            self._notify()

    @property
    def ticks(self) -> int:
        """Steps so far (calls of :meth:`tick`): the step numbers of scalars and of the NaN/Inf alert."""
        return self._ticks

    def _series_problems(self) -> list[str]:
        return [p for problems in self.series.problems.values() for p in problems][:2]

    def _label(self) -> str:
        """What the status says the viewer watches: "following `model` and its optimizer `opt`"."""
        name = self.series.optimizer_name
        if name is None:
            return self._target.label
        return (
            f"{self._target.label} and its optimizer `{name}`"
            if self._target.label
            else f"following optimizer `{name}`"
        )

    def clear_alert(self) -> None:
        """Forget the NaN/Inf alert; the next refresh that sees a NaN/Inf sets it again."""
        self.alert.clear()  # no lock: a refresh waiting for the device must not hold up the click
        self._notify()

    def status(self) -> dict:
        return {
            "state": self.state,
            "message": "; ".join(
                m for m in (self._label(), self.message, self.scalars.problem, *self._series_problems(), self.note) if m
            ),
            "last_refresh": self.last_refresh,
            "cost_ms": None if self.cost_s is None else round(self.cost_s * 1e3, 2),
            "device_ms": None if self.device_s is None else round(self.device_s * 1e3, 2),
            "refreshes": self.refreshes,
            "interval_s": round(self._throttle.interval, 3),
        }
