"""A model's snapshot as the work of a :class:`~nnx_lab.core.live.Refresher`: :meth:`SnapshotSource.dispatch`
describes the target (``_target.py``) as a :class:`~nnx_lab.core.snapshot.PendingSnapshot`, with the
training series logged for it, and :meth:`SnapshotSource.publish` finishes one and hands it to the status
line, the history and the training parts. The :class:`~nnx_lab.core.watcher.Watcher` wires them together.

``training`` is any object with the :class:`~nnx_lab.core.training.Training` face (``series``,
``scalars``, ``published``); ``line`` a :class:`~._status.StatusLine`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from .._gc import paused_gc
from ..snapshot import PendingSnapshot, Snapshot, StructureCache, Unchanged, check_layers, expand_layers
from ..stats import Deferred, devices_busy, kernel_cache_size
from ._engine import Refresher
from ._history import History
from ._status import StatusLine
from ._target import watch_target

if TYPE_CHECKING:
    from ..snapshot import Described

__all__ = ["ONE_OFFS", "SnapshotSource"]

#: First refreshes of a layout in a row that are not charged to the throttle (the layouts a structure keeps)
ONE_OFFS = 4
logger = logging.getLogger("nnx_lab")


class SnapshotSource:
    """What a live view of ``obj`` refreshes and what it last published (``snapshot``, dispatched at
    ``snapshot_step`` ticks; ``history``). ``notify()`` tells the view's listeners of a change;
    ``engine`` is set by the owner (the :class:`Refresher` whose dispatch and publish these are)."""

    engine: Refresher[PendingSnapshot]

    def __init__(
        self,
        obj: Any,
        *,
        stats: bool,
        layers: dict | None,
        history: int,
        training: Any,  # core.training's Training: a layer above (it imports live), not nameable here
        line: StatusLine,
        notify: Callable[[], None],
    ):
        self.stats, self.training, self.line, self._notify = stats, training, line, notify
        self.history = History(history)
        self.snapshot: Snapshot | None = None
        self.snapshot_step = 0  # the step (ticks so far) at which the published snapshot was dispatched
        self.in_tick = False  # a tick dispatches (in_a_tick)
        self.structure = StructureCache()  # walked once, reused while unchanged (no array or Variable)
        self._last_refs: list | None = None  # weak references to what the last dispatched refresh reduced
        self._compiled = 0
        self.device_s_per_byte = 0.0  # of the last refresh whose device time was measured (see publish)
        self.rate_known = False  # measured on a refresh that was no one-off
        self._one_offs = 0  # first refreshes of a layout in a row
        # What to describe: the object by weak reference, a (graphdef, state) pair, or a name followed
        # in a namespace (a TypeError here for a non-model); its stacked Variables' layer axes, checked
        # against the model now (a bad declaration raises here).
        self.target = watch_target(obj, on_gone=self.mark_gone)
        self.layers = check_layers(self.target.resolve(), layers)

    # -- the rows alone (nothing runs on the device) ----------------------------------------
    @paused_gc()  # no full collection of the user's heap for our temporaries (see paused_gc)
    def rows_first(self) -> bool:
        """Publish the rows alone unless something was published; whether the snapshot changed."""
        obj = self.target.resolve()
        if obj is None:
            return False
        try:
            with self.engine.lock:
                if self.snapshot is not None:
                    return False
                self.snapshot = PendingSnapshot(obj, stats=False, structure=self.structure, layers=self.layers).finish()
                return True
        except Exception:  # noqa: BLE001 - a boundary (a viewer's first display): the refresh that follows says what
            logger.debug("nnx_lab: the rows could not be shown first", exc_info=True)
            return False
        finally:
            del obj

    def count(self) -> int:
        """How many rows the target has now (0 when it is gone or cannot be described)."""
        obj = self.target.resolve()
        try:
            with self.engine.lock:
                return 0 if obj is None else len(self.structure.describe(obj, stats=False).rows)
        except Exception:  # noqa: BLE001 - a boundary (a viewer deciding how to start): the refresh says what
            logger.debug("nnx_lab: the rows could not be counted", exc_info=True)
            return 0
        finally:
            del obj

    def rows(self) -> Described | None:
        """The target's rows as a refresh has them (a stacked Variable's layers included), or None."""
        obj = self.target.resolve()
        try:
            return None if obj is None else expand_layers(self.structure.describe(obj), self.layers)
        finally:
            del obj

    def in_a_tick(self, refresh: Callable[[], bool]) -> bool:
        """``refresh()`` from a training step: what it dispatches holds its parameters for the update ratio."""
        self.in_tick = True
        try:
            return refresh()
        finally:
            self.in_tick = False

    # -- the engine's work -----------------------------------------------------------------------
    @paused_gc()
    def dispatch(self, defer: bool, skip_unchanged: bool) -> PendingSnapshot | None:
        if defer and devices_busy():  # a tick never waits for a place in a device's queue: the next one
            return None
        obj = self.target.resolve()
        if obj is None:
            self.mark_gone() if self.target.final else self.mark_missing(self.target.problem)
            return None
        self.line.found()
        self._compiled = kernel_cache_size()
        series = self.training.series
        quiet = self.line.state == "live" and not self.engine.in_flight and not self.training.scalars.pending
        same = self._last_refs if skip_unchanged and quiet else None
        problems = None if same is None else {k: list(v) for k, v in series.problems.items()}
        try:
            taken = series.take(self.engine.ticks, tick=self.in_tick)
            pending = PendingSnapshot(
                obj, stats=self.stats, repeated=True, defer=defer, structure=self.structure,
                series=taken, layers=self.layers, unless_same=same,
            )  # fmt: skip
        except Unchanged:  # the last refresh's statistics stand
            if series.problems != problems:  # a followed optimizer's name now holds something else
                self._notify()
            return None
        except Deferred:  # its one-launch program is compiling: try again at the next interval
            if any(series.problems.values()):
                self._notify()  # bad input to this refresh: said now, not after the compile
            return None
        except Exception as e:  # noqa: BLE001 - a boundary (a refresh): deleted mid-step, a model gone odd
            self.line.fail(e)  # logged there, once per message
            self._notify()
            return None
        finally:
            del obj
        self._last_refs = pending.array_refs
        return pending

    @paused_gc()
    def publish(self, newest: PendingSnapshot, dropped: list, step: int, wait: bool, arrived: bool) -> bool:
        try:
            logged = next((p for p in reversed(dropped) if p.logged), None)
            if logged is not None and not newest.logged:
                # A dropped refresh had gradients the newest lacks (a loop's last tick, then the cell's
                # end refresh): the newest shows them, marked with their step, instead of older ones.
                old = logged.finish()
                self.training.series.published(old.series, len(old), step)
            newest.wait()
            # Its device time is known where it was waited for before any step was queued behind it (a
            # wait at a loop's end also waits for the steps after it): a rate per byte read, by which a
            # refresh in a running loop, whose device time cannot be told apart from the steps', is charged.
            # A one-off's (per-array kernels while its program compiles: slower than the program) only
            # stands until a better one: an overestimate, which makes a loop refresh less, not cost more.
            quiet = arrived and step == self.engine.ticks
            measured = newest.device_time() if quiet and (not newest.first_of_layout or not self.rate_known) else None
            if measured is not None:
                self.line.device_s = measured
                self.device_s_per_byte = measured / max(newest.nbytes, 1)
                self.rate_known = not newest.first_of_layout
            snap = newest.finish()
        except Exception as e:  # noqa: BLE001 - a boundary (a refresh): its failure is its status
            self.line.fail(e)  # logged there, once per message
            self._notify()
            return False
        snap.series = self.training.series.published(snap.series, len(snap), step)
        cost_s = newest.host_s + self.training.series.updates.take_host_s()  # the update ratio's launches count
        # One-offs say nothing of the next (a structure's first layouts: parameters, then gradients...);
        # one-offs that keep coming (a structure that changes at every refresh) are the steady cost.
        self._one_offs = self._one_offs + 1 if newest.first_of_layout else 0
        if kernel_cache_size() == self._compiled and not 0 < self._one_offs <= ONE_OFFS:
            self.engine.throttle.cost(cost_s + self.device_s_per_byte * newest.nbytes)
        self.snapshot, self.snapshot_step = snap, step
        self.history.append(snap)
        self.line.published(cost_s)
        try:
            self.training.published(snap, refresh=self.line.refreshes, step=step, wait=wait)
        except Exception as e:  # noqa: BLE001 - a boundary (a refresh): the scalars or the alert failed
            self.line.fail(e)  # logged there; the snapshot itself is shown
        self._notify()
        return True

    # -- the model went away ---------------------------------------------------------------------
    def mark_missing(self, problem: str) -> None:
        """A followed name holds no model now: say so; the next refresh looks again."""
        if self.line.missing(problem):
            self._notify()

    def mark_gone(self) -> None:
        self.structure.clear()
        if self.line.gone(self.target.problem):
            engine = getattr(self, "engine", None)  # (gone before its owner set it: nothing running)
            if engine is not None:
                engine.stop_background()
            self._notify()
