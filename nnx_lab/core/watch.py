"""Keep a model's snapshot current while it trains, at almost no cost to the loop.

A :class:`Watcher` holds the model by weak reference (``del model`` frees its device
memory even while a viewer is on screen), refreshes at most ``max_rate`` times a
second *and* at most once per ``1 / budget`` times its own cost (so refreshing never
takes more than ``budget`` of the wall-clock time), and never raises into the
caller: a failed refresh becomes a status.

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

import threading
import time
import weakref
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .history import History
from .snapshot import Snapshot, snapshot
from ._util import MAX_RATE, check_number, one_line
from .stats import kernel_cache_size
from .tree import check_inspectable

T = TypeVar("T")


class Watcher:
    def __init__(self, obj: Any, *, max_rate: float = 2.0, budget: float = 0.02,
                 stats: bool = True, history: int = 100, between_steps: Callable[[], Any] | None = None):
        check_number(max_rate, "max_rate (refreshes per second)", 0, MAX_RATE, low_open=True)
        check_number(budget, "budget (fraction of the loop's time)", 0, 1, low_open=True)
        self.max_rate = max_rate
        self.budget = budget
        self.stats = stats
        self.history = History(history)
        self.snapshot: Snapshot | None = None
        self.state = "waiting"  # waiting | live | error | gone
        self.message = ""  # what the last refresh said (an error); replaced by the next one
        self.note = ""  # a standing remark (background refresh unavailable) that every status keeps
        self.refreshes = 0
        self.last_refresh: float | None = None  # epoch seconds
        self.cost_s: float | None = None
        self._interval = 1.0 / max_rate
        self._last_attempt = float("-inf")
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Watcher], None]] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._between_steps = between_steps  # run first by every tick (the UI applies queued clicks there)
        try:
            self._ref = weakref.ref(obj, self._on_collected)
        except TypeError:
            # Plain dicts cannot be weakly referenced; they hold no model of their own.
            self._ref = lambda obj=obj: obj
        check_inspectable(obj)  # a TypeError for a non-model, here and not in a loop

    # -- what the UI listens to ------------------------------------------------
    def subscribe(self, listener: Callable[["Watcher"], None]) -> None:
        self._listeners.append(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # a broken display must not break the training loop
                pass

    @property
    def target(self) -> Any | None:
        return self._ref()

    @property
    def interval(self) -> float:
        """Seconds between throttled refreshes: from ``max_rate`` and the cost budget."""
        return self._interval

    # -- refreshing -------------------------------------------------------------
    def refresh(self, *, force: bool = False) -> bool:
        """Take a new snapshot unless throttled (or ``force``). Returns whether one was taken."""
        now = time.monotonic()
        if not force and now - self._last_attempt < self._interval:
            return False
        if not self._lock.acquire(blocking=False):
            return False  # another thread is refreshing right now
        try:
            obj = self._ref()
            if obj is None:
                self._mark_gone()
                return False
            self._last_attempt = now
            compiled = kernel_cache_size()
            start = time.perf_counter()
            try:
                snap = snapshot(obj, stats=self.stats)
            except Exception as e:  # deleted mid-step, a model gone odd: say so, go on
                self.state, self.message = "error", one_line(e)
                self._notify()
                return False
            finally:
                del obj
            self.cost_s = time.perf_counter() - start
            if kernel_cache_size() == compiled:  # a refresh that compiled says nothing of the next
                self._interval = max(1.0 / self.max_rate, self.cost_s / self.budget)
            self.snapshot = snap
            self.history.append(snap)
            self.refreshes += 1
            self.last_refresh = time.time()
            self.state, self.message = "live", ""
            self._notify()
            return True
        finally:
            self._lock.release()

    def tick(self) -> bool:
        """Call once per training step: refreshes when the throttle allows."""
        if self._between_steps is not None:
            try:
                self._between_steps()
            except Exception:
                pass
        return self.refresh()

    def track(self, iterable: Iterable[T]) -> Iterator[T]:
        """``for batch in watcher.track(batches): ...`` — ticks after each step, refreshes at the end."""
        try:
            for item in iterable:
                yield item
                self.tick()
        finally:
            self.refresh(force=True)

    # -- background refreshing ----------------------------------------------------
    def start_background(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run_background, name="nnx_lab-watch", daemon=True)
        self._thread.start()

    def stop_background(self) -> None:
        self._stop.set()

    def _run_background(self) -> None:
        while not self._stop.wait(self._interval):
            self.refresh(force=True)
            if self.state == "gone":
                return

    # -- the model went away ----------------------------------------------------------
    def _on_collected(self, _ref) -> None:
        self._mark_gone()

    def _mark_gone(self) -> None:
        if self.state != "gone":
            self.state, self.message = "gone", "the model was garbage-collected"
            self._stop.set()
            self._notify()

    def status(self) -> dict:
        return {
            "state": self.state,
            "message": "; ".join(m for m in (self.message, self.note) if m),
            "last_refresh": self.last_refresh,
            "cost_ms": None if self.cost_s is None else round(self.cost_s * 1e3, 2),
            "refreshes": self.refreshes,
            "interval_s": round(self._interval, 3),
        }
