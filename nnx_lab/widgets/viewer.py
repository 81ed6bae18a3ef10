"""The live State viewer: a widget over a core.snapshot.Watcher."""

from __future__ import annotations

import pathlib
import sys
from typing import Any, Iterable, Iterator, TypeVar

import anywidget
import jax
import traitlets

from .._ipython import busy_queue as inbox, cell_hooks as live
from ..core import compat
from ..core._util import message_problem
from ..core.snapshot import HISTORY_STATS
from ..core.render import html_table, summary_line
from ..core.snapshot import Watcher

T = TypeVar("T")
STATIC = pathlib.Path(__file__).resolve().parent.parent / "static"


class StateViewer(compat.MimebundleDisplay, anywidget.AnyWidget):
    """Every Variable of a model, refreshed while it trains. Create it with ``nnx_lab.watch``."""

    _esm = STATIC / "viewer.js"
    snapshot = traitlets.Dict().tag(sync=True)
    status = traitlets.Dict().tag(sync=True)
    sparkline_stat = traitlets.Unicode("norm").tag(sync=True)

    def __init__(self, obj: Any, *, max_rate: float = 2.0, background: bool = False,
                 stats: bool = True, history: int = 100, **kwargs: Any):
        self._watcher = Watcher(obj, max_rate=max_rate, stats=stats, history=history,
                                between_steps=inbox.drain)
        super().__init__(**kwargs)
        self._watcher.subscribe(self._publish)
        self._watcher.publish_from_thread = background_unsupported() is None
        self.on_msg(self._on_message)
        self._watcher.refresh(force=True)
        live.track_widget(self)
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
        live.untrack_widget(self)
        super().close()

    @property
    def watcher(self) -> Watcher:
        return self._watcher

    @property
    def last_snapshot(self):
        """The latest Snapshot: a refresh still on its way from the device is waited for first
        (the end of a loop or cell publishes from a thread, so reading right after one is exact)."""
        self._watcher.wait()
        return self._watcher.snapshot

    def _after_cell(self) -> None:
        if self._watcher.state != "gone":
            # Dispatched now, published when the device gets there (the kernel is not held up by
            # steps the cell queued), or at once where widget messages cannot come from threads.
            self._watcher.refresh(force=True, wait=not self._watcher.publish_from_thread)

    # -- talking to the browser ------------------------------------------------------
    def _publish(self, watcher: Watcher) -> None:
        snap = watcher.snapshot
        if snap is not None and (not self.snapshot or self.snapshot.get("refresh") != watcher.refreshes):
            payload = snap.to_dict()
            payload["refresh"] = watcher.refreshes
            payload["structure"] = watcher.history.structure
            self.snapshot = payload
        self.status = watcher.status()

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if message_problem(content):
            return
        kind = content.get("type")
        if kind == "refresh":
            self.refresh()
        elif kind == "history":
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
    def _repr_mimebundle_(self, **kwargs: Any):
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        snap = self._watcher.snapshot
        if snap is not None:
            data["text/plain"] = f"StateViewer · {summary_line(snap)}"
            data["text/html"] = html_table(snap)
        return bundle

    def __repr__(self) -> str:
        snap = self._watcher.snapshot
        return f"StateViewer · {summary_line(snap)}" if snap is not None else "StateViewer"


def background_unsupported() -> str | None:
    """Why widget updates from a thread would not arrive here, or None when they do."""
    kernel_module = sys.modules.get("ipykernel")
    if kernel_module is None:
        return "not running in an IPython kernel"
    version = getattr(kernel_module, "__version__", "0")
    if int(version.split(".")[0]) < 6:
        return f"ipykernel {version} sends messages from the main thread only"
    if "google.colab" in sys.modules:
        return "thread-delivered widget updates are not verified on Colab"
    return None


def watch(obj: Any, *, max_rate: float = 2.0, background: bool = False, stats: bool = True,
          history: int = 100, display: bool = True) -> StateViewer:
    """Show a live viewer of ``obj`` and return it; refreshes after every cell, on
    ``viewer.tick()`` / ``viewer.track(...)``, and optionally from a background thread.

    Holds ``obj`` by weak reference. Raises TypeError at once for something that is not
    a model; after that, refreshing never raises. With several processes (``jax.distributed``),
    every process refreshes (they reduce sharded arrays together) and only process 0 displays.
    """
    viewer = StateViewer(obj, max_rate=max_rate, background=background, stats=stats, history=history)
    try:
        from IPython import get_ipython
    except ImportError:
        return viewer
    if display and get_ipython() is not None and jax.process_index() == 0:
        from IPython.display import display as show

        show(viewer)
    return viewer
