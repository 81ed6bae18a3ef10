"""The live-refresh engine: launch work now, show it once its numbers have arrived, never make the
caller wait for the device. Its threads and lock are docs/ARCHITECTURE.md's "Threads and locks";
the rules they keep:

- The **caller's thread** (a loop's ``tick()``, a cell's end) finds most ticks nothing due, after two
  clock reads and without the lock. When due it takes the lock, publishes the newest piece that has
  arrived (dropping older ones unpublished: ``publish`` sees them) and *dispatches* one more, never
  waiting; at most ``max_in_flight`` ride the device's queue. A caller that would wait for the lock
  (a publisher holds it) skips this tick, unless it asked to wait.
- A forced refresh that does not wait is published by a short-lived **publisher thread** where the
  UI may send messages from threads; the **background thread** refreshes between cells.
- **Several processes** must launch the same programs in the same order: no refresh is due by the
  clock, one happens every ``lockstep_every`` ticks (and at a loop's or cell's end), and waits.

The clock is injectable (``clock=``): tests move time instead of sleeping.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Callable, Generic, Iterable, Iterator, Protocol, TypeVar, cast, runtime_checkable

from ._throttle import Throttle
from .threads import start_thread, when_ready

__all__ = ["MAX_IN_FLIGHT", "POLL_S", "Pending", "Refresher"]

#: Pieces of work riding the device's queue at once (each holds a few numbers per row, no array).
MAX_IN_FLIGHT = 8
POLL_S = 0.01  # a tick asks whether work in flight has arrived at most this often (not at every step)


@runtime_checkable
class Pending(Protocol):
    """Work launched now and read later (a snapshot's statistics, a capture report, a comparison)."""

    host_s: float  # the host's time spent launching it (what the throttle is charged)

    def ready(self) -> bool:
        """Whether its numbers have arrived (never waits)."""
        ...

    def wait(self) -> None:
        """Wait for its numbers (the device's time)."""
        ...

    def finish(self) -> object:
        """Its result, once arrived; raises what went wrong."""
        ...


P = TypeVar("P", bound=Pending)
T = TypeVar("T")


class Refresher(Generic[P]):
    """The in-flight queue, its throttle and its threads (see the module docstring).

    ``dispatch(defer, skip_unchanged)`` launches one piece of work and returns it (None: nothing
    launched, the caller said why). ``publish(newest, dropped, step, wait, arrived)`` shows ``newest``,
    the pieces dispatched before it and dropped unpublished being ``dropped``; ``step`` is the number
    of ticks when it was dispatched; ``wait``: the caller waits for everything in flight; ``arrived``:
    its numbers were just waited for (its device time can be measured). It returns whether it published."""

    def __init__(
        self,
        throttle: Throttle,
        dispatch: Callable[[bool, bool], P | None],
        publish: Callable[[P, list, int, bool, bool], bool],
        *,
        processes: int = 1,
        clock: Callable[[], float] = time.monotonic,
        max_in_flight: int = MAX_IN_FLIGHT,
        publisher: str = "nnx_lab-publish",
    ):
        self.throttle = throttle
        self.max_in_flight, self.publisher = max_in_flight, publisher  # publisher: its threads' name
        self._dispatch, self._publish = dispatch, publish
        self.clock = clock
        self.in_flight: collections.deque[P] = collections.deque()  # dispatched, not published
        self._steps: dict = {}  # piece -> ticks so far when it was dispatched
        self.ticks = 0
        self.last_attempt = float("-inf")
        self._last_poll = float("-inf")
        self.lock = threading.RLock()
        # Whether a thread may publish (the UI's listeners send widget messages): set by the viewer
        # where the kernel delivers messages from threads. Without it, a forced refresh waits.
        self.publish_from_thread = False
        self.lockstep = processes > 1
        self.lockstep_every = 50  # ticks between refreshes when lockstep
        self.thread: threading.Thread | None = None
        self._stop = threading.Event()

    def due(self) -> bool:
        """Whether the throttle allows a refresh now (and the queue has room)."""
        return self.clock() - self.last_attempt >= self.throttle.interval and len(self.in_flight) < self.max_in_flight

    def refresh(self, *, force: bool = False, wait: bool | None = None, skip_unchanged: bool = False) -> bool:
        """Publish what has arrived and dispatch when due (or ``force``); ``wait`` (default:
        ``force``): wait for what was dispatched now. Returns whether something was published."""
        wait = force if wait is None else wait
        if not force and not self.lockstep:  # most ticks: nothing due or to publish, said without a lock
            now = self.clock()
            if not self.due() and (not self.in_flight or now - self._last_poll < POLL_S):
                return False
            self._last_poll = now
        if self.lockstep:
            if not force and self.ticks % self.lockstep_every:
                return False
            force = wait = True
        if not self.lock.acquire(blocking=wait):
            return False  # another thread is refreshing right now
        try:
            # What has arrived is shown now; a refresh that waits supersedes what is still on its way.
            published = self.publish_arrived(wait=False)
            if not force and not self.due():
                return published
            self.last_attempt = self.clock()
            pending = self._dispatch(not force, skip_unchanged)
            if pending is None:
                return published
            self.in_flight.append(pending)
            self._steps[pending] = self.ticks
            if wait or pending.ready():
                return self.publish_arrived(wait=True) or published
            if force and self.publish_from_thread:
                self.publish_when_ready(pending)
            return published
        finally:
            self.lock.release()

    def publish_arrived(self, *, wait: bool, upto: P | None = None) -> bool:
        """Publish the newest piece whose numbers have arrived (all of them, waiting, with ``wait``;
        up to ``upto``); older ones are dropped unpublished. The caller holds the lock."""
        newest, dropped, step = None, [], self.ticks
        while self.in_flight and (wait or upto is not None or self.in_flight[0].ready()):
            if newest is not None:
                dropped.append(newest)
            newest = self.in_flight.popleft()
            step = self._steps.pop(newest, step)
            if newest is upto:
                break
        if newest is None:
            return False
        return self._publish(newest, dropped, step, wait, wait or upto is not None)

    def publish_when_ready(self, pending: P) -> None:
        """A short-lived thread waits for ``pending`` (off the caller's thread) and publishes it."""

        def publish():
            with self.lock:
                if pending in self.in_flight:
                    self.publish_arrived(wait=False, upto=pending)

        when_ready(pending, publish, name=self.publisher)

    def wait(self) -> None:
        """Publish everything in flight, waiting for the device (tests, scripts)."""
        with self.lock:
            self.publish_arrived(wait=True)

    def drop(self) -> None:
        """Forget everything in flight, unpublished (its owner is closing)."""
        with self.lock:
            self.in_flight.clear()
            self._steps.clear()

    def track(self, iterable: Iterable[T], tick: Callable[[bool], object]) -> Iterator[T]:
        """Yield ``iterable``'s items, calling ``tick(last)`` after each (``last``: the loop ends now),
        then refresh at once (waiting only where no thread may publish)."""
        try:
            items = iter(iterable)
            done = object()
            item = next(items, done)
            while item is not done:
                yield cast(T, item)  # not the sentinel: one of iterable's items
                item = next(items, done)
                tick(item is done)  # the last step's gradients reach the refresh below
        finally:  # where a thread may publish them, the loop's end does not wait for the device either
            self.refresh(force=True, wait=not self.publish_from_thread)

    # -- background refreshing ----------------------------------------------------
    def start_background(self, stopped: Callable[[], bool]) -> bool:
        """Refresh at the throttle's interval on a thread until :meth:`stop_background` or
        ``stopped()``; False (nothing started) with several processes."""
        if self.lockstep:
            return False
        if self.thread is not None and self.thread.is_alive():
            return True
        self._stop.clear()

        def run() -> None:
            while not self._stop.wait(self.throttle.interval):
                self.refresh(force=True, skip_unchanged=True)
                if stopped():
                    return

        self.thread = start_thread(run, "nnx_lab-watch", stop=self._stop.set)
        return True

    def stop_background(self) -> None:
        self._stop.set()
