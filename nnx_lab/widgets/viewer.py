"""The live State viewer: a widget over a core.snapshot.Watcher."""

from __future__ import annotations

import threading
from typing import Any, Iterable, Iterator, TypeVar

import traitlets

from .._ipython import busy_queue
from ..core.render import html_table, summary_line
from ..core.snapshot import HISTORY_STATS, STAT_NAMES, Watcher, threads_see_jax_config
from ._base import STATIC, Widget, background_unsupported, command

T = TypeVar("T")


class StateViewer(Widget):
    """Every Variable of a model, refreshed while it trains. Create it with ``nnx_lab.watch``.

    >>> from flax import nnx
    >>> from nnx_lab import watch
    >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    >>> viewer = watch(model, display=False)
    >>> viewer.status["state"], viewer.status["refreshes"]
    ('live', 1)
    """

    _esm = STATIC / "viewer.js"
    snapshot = traitlets.Dict().tag(sync=True)
    status = traitlets.Dict().tag(sync=True)
    sparkline_stat = traitlets.Unicode("norm").tag(sync=True)

    def __init__(self, obj: Any, *, max_rate: float = 2.0, background: bool = False,
                 stats: bool = True, history: int = 100, rows_first: bool = False, layers: dict | None = None,
                 **kwargs: Any):
        self._watcher = Watcher(obj, max_rate=max_rate, stats=stats, history=history,
                                between_steps=busy_queue.drain, layers=layers)
        self._sent_refresh: int | None = None  # the refresh whose statistics the browser has
        self._sent_rows: tuple | None = None  # (description, failed rows, structure id) of the snapshot trait
        super().__init__(**kwargs)
        self._watcher.subscribe(self._publish)
        self._watcher.publish_from_thread = background_unsupported() is None
        self._first: threading.Thread | None = None
        if rows_first and self._watcher.publish_from_thread and threads_see_jax_config():
            # Shown in a kernel that takes widget messages from threads: the rows now, the statistics
            # from a thread once their kernels are compiled and have run (a big model's table appears at once).
            self._watcher.show_rows_first()
            self._first = threading.Thread(target=self._watcher.refresh, kwargs={"force": True},
                                           name="nnx_lab-first", daemon=True)
            self._first.start()
        else:
            self._watcher.refresh(force=True)
        if background:
            self.start_background()

    # -- the training-loop API ----------------------------------------------------
    def tick(self) -> bool:
        """Call once per step; refreshes when the throttle allows. Never raises."""
        return self._watcher.tick()

    def track(self, iterable: Iterable[T]) -> Iterator[T]:
        """``for batch in viewer.track(batches): step(batch)``: ticks after each step."""
        return self._watcher.track(iterable)

    def refresh(self) -> bool:
        """Refresh now, ignoring the throttle."""
        return self._watcher.refresh(force=True)

    def start_background(self) -> None:
        """Refresh from a background thread, where the kernel delivers widget updates from threads."""
        reason = background_unsupported()
        if reason:
            self._watcher.note = f"background refresh unavailable ({reason}); refreshing after each cell and on tick()"
            self._publish(self._watcher)
            return
        self._watcher.start_background()

    def stop_background(self) -> None:
        self._watcher.stop_background()

    def close(self) -> None:
        """Stop refreshing (after cells and in the background) and close the widget."""
        watcher = getattr(self, "_watcher", None)  # absent when construction failed (not a model)
        if watcher is not None:
            watcher.stop_background()
        super().close()

    @property
    def watcher(self) -> Watcher:
        return self._watcher

    @property
    def last_snapshot(self):
        """The latest Snapshot: a refresh still on its way from the device is waited for first
        (the end of a loop or cell publishes from a thread, so reading right after one is exact)."""
        if self._first is not None:
            self._first.join()
        self._watcher.wait()
        return self._watcher.snapshot

    def _after_cell(self) -> None:
        if self._first is not None:  # the first statistics, dispatched before this cell's changes
            self._first.join()
            self._first = None
        if self._watcher.state != "gone":
            # Dispatched now, published when the device gets there (the kernel is not held up by
            # steps the cell queued), or at once where widget messages cannot come from threads.
            self._watcher.refresh(force=True, wait=not self._watcher.publish_from_thread)

    # -- talking to the browser ------------------------------------------------------
    # The rows (paths, types, shapes, placement...) travel in the ``snapshot`` trait, with the statistics
    # of that moment, whenever they change; every other refresh sends only its statistics, as one
    # float32 buffer in a "stats" message (after display: Colab drops buffers in a widget's initial
    # state). A view asks for the latest statistics when it renders.

    def _publish(self, watcher: Watcher) -> None:
        snap = watcher.snapshot
        if snap is not None and self._sent_refresh != watcher.refreshes:
            sent, structure = self._sent_rows, watcher.history.structure
            if (sent is None or sent[0] is not snap.description or sent[1] != snap.status_key()
                    or sent[2] != structure or not self.snapshot):
                payload = snap.to_dict()
                payload["refresh"] = watcher.refreshes
                payload["structure"] = watcher.history.structure
                self.snapshot = payload
                self._sent_rows = (snap.description, snap.status_key(), structure)
            else:
                self.send_stats()
            self._sent_refresh = watcher.refreshes
        self.status = watcher.status()

    def send_stats(self) -> None:
        """Send the latest refresh's statistics as one float32 buffer (``STAT_NAMES`` columns, one
        value per row; ``exact`` holds the few numbers float32 cannot carry)."""
        snap = self._watcher.snapshot
        if snap is None:
            return
        buffer, exact = snap.stats_buffer()
        self.send({"type": "stats", "refresh": self._watcher.refreshes, "structure": self._watcher.history.structure,
                   "rows": len(snap), "names": list(STAT_NAMES), "exact": exact}, buffers=[buffer])

    @command("stats")
    def _stats_request(self, content: dict, _buffers: Any) -> None:
        self.send_stats()

    @command("refresh")
    def _refresh_request(self, content: dict, _buffers: Any) -> None:
        self.refresh()

    @command("history")
    def _history_request(self, content: dict, _buffers: Any) -> None:
        self.send_history(str(content.get("stat", self.sparkline_stat)))

    def send_history(self, stat: str) -> None:
        """Send one statistic's history as a float32 buffer (after display: Colab-safe)."""
        if stat not in HISTORY_STATS:
            stat = "norm"
        history = self._watcher.history
        series = history.series(stat)
        self.send(
            {"type": "history", "stat": stat, "structure": history.structure, "rows": int(series.shape[0]),
             "length": int(series.shape[1]), "refresh": self._watcher.refreshes},
            buffers=[series.tobytes()],
        )

    # -- what a saved notebook shows without a kernel ----------------------------------
    def _fallback(self) -> tuple[str, str] | None:
        snap = self._watcher.snapshot
        return None if snap is None else (f"StateViewer · {summary_line(snap)}", html_table(snap))

    def __repr__(self) -> str:
        snap = self._watcher.snapshot
        return f"StateViewer · {summary_line(snap)}" if snap is not None else "StateViewer"


def watch(obj: Any, *, max_rate: float = 2.0, background: bool = False, stats: bool = True,
          history: int = 100, display: bool = True, layers: dict | None = None) -> StateViewer:
    """Show a live viewer of ``obj`` and return it; refreshes after every cell, on
    ``viewer.tick()`` / ``viewer.track(...)``, and optionally from a background thread.

    Holds ``obj`` by weak reference (keep your own reference to the model). Refreshing never
    raises. With several processes (``jax.distributed``), every process refreshes (they reduce
    sharded arrays together) and only process 0 displays.

    Args:
      obj: what :func:`nnx_lab.snapshot` accepts: an ``nnx.Module``, an ``nnx.State``, ...
      max_rate: refreshes per second at most, in (0, 100].
      background: also refresh from a background thread while a cell runs.
      stats: compute statistics on the device (``False``: descriptions only).
      history: how many refreshes to keep for the sparklines (at least 1).
      display: show the viewer; with ``False`` only return it.
      layers: path prefix -> layer axis of stacked Variables (``{"blocks": 0}``, built with
        ``nnx.vmap``/``nnx.scan``): one row per layer under each. Axes flax recorded
        (``transform_metadata={nnx.PARTITION_NAME: "layers"}`` with sharding names) need no declaration.

    Raises:
      TypeError: ``obj`` is not a model (nothing :func:`nnx_lab.snapshot` accepts).
      ValueError: ``max_rate`` or ``history`` out of range; a ``layers`` prefix with no Variable or no such axis.

    >>> from flax import nnx
    >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    >>> viewer = watch(model, display=False)
    >>> viewer
    StateViewer · Linear: 2 variables, 9 elements, 36 B on 1× ...
    >>> for step in viewer.track(range(3)):
    ...     pass
    >>> viewer.status["state"]
    'live'
    """
    viewer = StateViewer(obj, max_rate=max_rate, background=background, stats=stats, history=history,
                         layers=layers)
    return viewer.show() if display else viewer
