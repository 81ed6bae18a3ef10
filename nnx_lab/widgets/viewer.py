"""The live State viewer: a widget over a core.watcher.Watcher."""

from __future__ import annotations

import math
import threading
from typing import Any, Iterable, Iterator, TypeVar

import numpy as np
import traitlets

from .._ipython import busy_queue
from .._ipython.namespace import user_namespace
from ..core.live import HISTORY_STATS, NameTarget
from ..core.live.threads import start_thread
from ..core.render import html_table, summary_line
from ..core.snapshot import PRECISION, Snapshot, round_significant
from ..core.stats import STAT_NAMES, threads_see_jax_config
from ..core.training import series_buffer, series_meta
from ..core.watcher import Watcher
from . import traits, wire
from ._base import STATIC, Widget, background_note, background_unsupported
from .requests import AckFields, Buffers, command
from .viewer_baseline import Baseline, BaselineSource, describe_problem, pin, requested_source, since_message

T = TypeVar("T")

#: ``watch``'s default shows a model of more Variables than this rows first, statistics after: its
#: first statistics in a new session take seconds (10,000 Variables: ~2 s of compiling here).
ROWS_FIRST_ABOVE = 2000


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
    snapshot = traits.Payload(traits.ViewerSnapshot).tag(sync=True)
    status = traits.Payload(traits.ViewerStatus).tag(sync=True)
    sparkline_stat = traitlets.Unicode("norm").tag(sync=True)
    #: the NaN/Inf alert (core.training.NonfiniteAlert.to_dict): first step, refresh and path; {} when none
    alert = traits.Payload(traits.Alert).tag(sync=True)
    _scalars_sent = -1  # the ScalarStore version last sent to the browser

    def __init__(
        self,
        obj: Any,
        *,
        max_rate: float = 2.0,
        background: bool = False,
        stats: bool = True,
        history: int = 100,
        rows_first: bool | None = None,
        optimizer: Any = None,
        updates: bool = True,
        layers: dict | None = None,
        **kwargs: Any,
    ):
        if isinstance(obj, str):  # a name in the notebook, looked up at every refresh
            obj = NameTarget(obj, user_namespace(f"watch({obj!r})"))
        if isinstance(optimizer, str):  # the optimizer's name, followed too (a functional loop rebinds both)
            optimizer = NameTarget(optimizer, user_namespace(f"watch(optimizer={optimizer!r})"))
        self._watcher = Watcher(
            obj,
            max_rate=max_rate,
            stats=stats,
            history=history,
            between_steps=busy_queue.drain,
            optimizer=optimizer,
            updates=updates,
            layers=layers,
        )
        self._sent_refresh: int | None = None  # the refresh whose statistics the browser has
        self._sent_rows: tuple | None = None  # (description, failed rows, structure id) of the snapshot trait
        super().__init__(**kwargs)
        self._watcher.subscribe(self._publish)
        self._watcher.publish_from_thread = background_unsupported() is None
        self._first: threading.Thread | None = None
        # Shown before its first statistics arrived: the saved notebook's copy is updated when they do.
        self._static_stale = False
        self._static_lock = threading.Lock()
        if rows_first is None:  # automatic: a big model's table at once, a small one's with its numbers
            rows_first = stats and self._watcher.variable_count() > ROWS_FIRST_ABOVE
        if rows_first and self._watcher.publish_from_thread and threads_see_jax_config():
            # Shown in a kernel that takes widget messages from threads: the rows now, the statistics
            # from a thread once their kernels are compiled and have run (a big model's table appears at once).
            self._watcher.show_rows_first()
            self._first = start_thread(self._watcher.refresh, "nnx_lab-first", force=True)
        else:
            self._watcher.refresh(force=True)
        if background:
            self.start_background()

    # -- the training-loop API ----------------------------------------------------
    def tick(self, *, grads: Any = None, updates: Any = None, stop_on_nonfinite: bool = False,
             keep_last_good: bool = False, **scalars: Any) -> bool:  # fmt: skip
        """Call once per step; refreshes when the throttle allows. Raises only ``NonFiniteStep`` (see :meth:`track`).

        ``viewer.tick(loss=loss, lr=lr, grads=grads)`` also records scalars and gradients for this
        step (see :meth:`log`); the scalars' curves are drawn in the viewer's header."""
        kw = dict(stop_on_nonfinite=stop_on_nonfinite, keep_last_good=keep_last_good)
        return self._watcher.tick(grads=grads, updates=updates, **kw, **scalars)

    def log(self, *, grads: Any = None, updates: Any = None, **scalars: Any) -> None:
        """Record scalars, gradients or updates for the current step without refreshing, e.g. inside
        ``for batch in viewer.track(batches):``: ``viewer.log(loss=loss, grads=grads)``.

        Each scalar is a device scalar (a ``jax.Array`` of one element) or a number. Device values are
        never synced here: they are read once computed, when a refresh is published (every step
        gets a point; the header keeps up to 256 per name, evenly spread over the steps). A value
        that is not a real scalar is not recorded and the status line says so; a NaN or Inf is
        drawn and raises the NaN/Inf banner.

        ``grads`` (e.g. what ``nnx.grad`` returned) and ``updates`` (what the optimizer applied) are
        matched to the rows by path and reduced on the device with the parameters if this step's
        tick refreshes: kept by reference, never copied or synced. Without ``updates``, the update
        ratio ‖θₜ − θₜ₋₁‖/‖θₜ₋₁‖ is measured from the parameters themselves (``watch(updates=...)``)."""
        self._watcher.log(grads=grads, updates=updates, **scalars)

    def clear_alert(self) -> None:
        """Dismiss the NaN/Inf banner (it names the first step with a NaN/Inf until cleared)."""
        self._watcher.clear_alert()

    def track(
        self, iterable: Iterable[T], *, stop_on_nonfinite: bool = False, keep_last_good: bool = False
    ) -> Iterator[T]:
        """``for batch in viewer.track(batches): step(batch)``: ticks after each step. ``stop_on_nonfinite``:
        raise ``nnx_lab.NonFiniteStep`` within one step of the first whose logged scalars or gradients
        hold a NaN/Inf (checked on the device; no step waits). ``keep_last_good``: an on-device copy of the
        model's and optimizer's state, up to 2 × their size (the status line says), for :meth:`restore_last_good`."""
        return self._watcher.track(iterable, stop_on_nonfinite=stop_on_nonfinite, keep_last_good=keep_last_good)

    last_good = property(lambda self: self._watcher.last_good, doc="the state kept before the bad step (or None)")

    def restore_last_good(self) -> int:
        """Restore the model and optimizer to their state before the bad step; returns that step."""
        return self._watcher.restore_last_good()

    def refresh(self) -> bool:
        """Refresh now, ignoring the throttle."""
        return self._watcher.refresh(force=True)

    def start_background(self) -> None:
        """Refresh from a background thread, where the kernel delivers widget updates from threads."""
        reason = background_unsupported()
        if reason:
            self._watcher.note = background_note(reason)
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
        first = getattr(self, "_first", None)
        if first is not None:  # the first statistics, on their way: published before it closes, not after
            first.join()
            self._first = None
        super().close()

    # -- compare to a baseline (widgets/viewer_baseline.py) ---------------------------------------
    _baseline: Baseline | None = None

    def compare_to(self, baseline: BaselineSource | None = "stats") -> None:
        """Pin a baseline and show each row's change since it (the "since" column) while training goes
        on: ``"stats"`` (the latest statistics: free; a lower bound of ‖θ−θ₀‖/‖θ₀‖), ``"arrays"`` (a
        device copy of every array, its bytes said: the true ‖θ−θ₀‖/‖θ₀‖ at each refresh), a Snapshot
        or a checkpoint path (their statistics); None unpins (and frees a device copy)."""
        self._baseline = (
            None
            if baseline is None
            else pin(baseline, self._watcher.snapshot, self._watcher.target, self._watcher.refreshes)
        )
        self.send_since()

    def since(self) -> dict[str, float | None]:
        """Each row's change since the pinned baseline, by path text (what the "since" column shows); {} unpinned."""
        msg = since_message(self._baseline, self._watcher)
        if msg["values"] is None:
            return {}
        return dict(zip((row.path_text for row in self._watcher.snapshot.rows), msg["values"]))

    def send_since(self) -> None:
        """Send each row's change since the baseline (``{"type": "since", "values": None}`` when none)."""
        self.send(since_message(self._baseline, self._watcher))

    @command(wire.COMPARE_TO)
    def _compare_to_request(self, content: dict, _buffers: Buffers) -> AckFields:
        try:  # only source "none" unpins: a malformed message is an error, the baseline stays
            self.compare_to(requested_source(content))
        except (TypeError, ValueError) as e:  # said beside the control, in one line
            return {"state": "error", "message": describe_problem(e)}
        return {"state": "done"}

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
        if self._watcher.state != "gone":  # (a followed name that is missing now is looked up again)
            # Dispatched now, published when the device gets there (the kernel is not held up by
            # steps the cell queued), or at once where widget messages cannot come from threads.
            self._watcher.refresh(force=True, wait=not self._watcher.publish_from_thread, skip_unchanged=True)

    # -- talking to the browser ------------------------------------------------------
    # The rows (paths, types, shapes, placement...) travel in the ``snapshot`` trait, with the statistics
    # of that moment, whenever they change; every other refresh sends only its statistics, as one
    # float32 buffer in a "stats" message (after display: Colab drops buffers in a widget's initial
    # state). A view asks for the latest statistics when it renders.

    def show(self) -> StateViewer:
        with self._static_lock:  # the first statistics' thread checks the flag under this lock
            rows_only = not self._watcher.refreshes  # what the display below may hold: the rows alone
            super().show()
            self._static_stale = self._display_handle is not None and rows_only
            if self._static_stale and self._watcher.refreshes:  # they arrived while it was being shown
                self._static_stale = False
                self._update_display()
        return self

    def _publish(self, watcher: Watcher) -> None:
        self._publish_state(watcher)
        if self._static_stale and watcher.refreshes:
            with self._static_lock:
                if self._static_stale:  # shown with its rows only: now the saved copy gets the statistics
                    self._static_stale = False
                    self._update_display()

    def _publish_state(self, watcher: Watcher) -> None:
        snap = watcher.snapshot
        if snap is not None and self._sent_refresh != watcher.refreshes:
            sent, structure = self._sent_rows, watcher.history.structure
            if (
                sent is None
                or sent[0] is not snap.description
                or sent[1] != snap.status_key()
                or sent[2] != structure
                or not self.snapshot
            ):
                payload = snap.to_dict()
                payload["refresh"] = watcher.refreshes
                payload["structure"] = watcher.history.structure
                series = self._series(snap)
                if series is not None:
                    meta, buffer = series
                    payload["series"] = {
                        **meta,
                        # JSON has no inf: a value beyond float32's range is None here, exact in meta
                        "values": [v if math.isfinite(v) else None for v in np.frombuffer(buffer, np.float32).tolist()],
                    }
                self.snapshot = payload
                self._sent_rows = (snap.description, snap.status_key(), structure)
            else:
                self.send_stats()
            self._sent_refresh = watcher.refreshes
        alert = watcher.alert.to_dict()
        if alert != self.alert:
            self.alert = alert
        if watcher.scalars.version != self._scalars_sent:
            self.send_scalars()
        if self._baseline is not None:
            self.send_since()
        self.status = watcher.status()

    def send_stats(self) -> None:
        """Send the latest refresh's statistics as one float32 buffer (``STAT_NAMES`` columns, one
        value per row; ``exact`` holds the few numbers float32 cannot carry)."""
        snap = self._watcher.snapshot
        if snap is None:
            return
        buffer, exact = snap.stats_buffer()
        msg = {
            "type": wire.STATS,
            "refresh": self._watcher.refreshes,
            "structure": self._watcher.history.structure,
            "rows": len(snap),
            "names": list(STAT_NAMES),
            "exact": exact,
        }
        buffers = [buffer]
        series = self._series(snap)
        if series is not None:  # gradients, optimizer state: a second buffer (float32[series, stats + ratio, rows])
            msg["series"] = series[0]
            buffers.append(series[1])
        self.send(msg, buffers=buffers)

    def _series(self, snap: Snapshot) -> tuple[dict, bytes] | None:
        meta = series_meta(snap.series, self._watcher.ticks)
        if snap.series is None or meta is None:
            return None
        norm = snap.stat_matrix[:, STAT_NAMES.index("norm")]
        buffer, exact = series_buffer(snap.series, norm, PRECISION)
        return ({**meta, "exact": exact} if exact else meta), buffer

    @command(wire.STATS)
    def _stats_request(self, content: dict, _buffers: Buffers) -> None:
        self.send_stats()
        if self._baseline is not None:  # a view drawn after compare_to(): its control shows the baseline
            self.send_since()

    @command(wire.REFRESH)
    def _refresh_request(self, content: dict, _buffers: Buffers) -> AckFields:
        self.refresh()
        return {"state": "done"}  # answered: the front end says "no answer" when none comes

    @command(wire.HISTORY)
    def _history_request(self, content: dict, _buffers: Buffers) -> None:
        self.send_history(str(content.get("stat", self.sparkline_stat)))

    @command(wire.SCALARS)
    def _scalars_request(self, content: dict, _buffers: Buffers) -> None:
        self.send_scalars()

    @command(wire.CLEAR_ALERT)
    def _clear_alert_request(self, content: dict, _buffers: Buffers) -> None:
        self.clear_alert()

    def send_scalars(self) -> None:
        """Send every scalar's curve: names and point counts, then two float64 buffers, the steps and
        the values (rounded as the statistics are), names one after the other. Sent
        after display (Colab drops buffers of the initial state) and at each refresh that read
        new values."""
        store = self._watcher.scalars
        self._scalars_sent = store.version
        names, counts, steps, values = [], [], [], []
        for name in store.names:
            s, v = store.series(name)
            names.append(name)
            counts.append(int(len(s)))
            steps.append(s)
            values.append(v)
        if not names:
            return
        step_buffer = np.concatenate(steps).astype(np.float64)
        # Rounded as the payload's statistics are (float64: a huge loss stays finite, 1/3 is 0.3333).
        value_buffer = np.array(
            [float(f"{v:.{PRECISION}g}") for v in round_significant(np.concatenate(values), PRECISION).tolist()]
        )
        self.send(
            {"type": wire.SCALARS, "names": names, "counts": counts, "version": store.version},
            buffers=[step_buffer.tobytes(), value_buffer.tobytes()],
        )

    def send_history(self, stat: str) -> None:
        """Send one statistic's history as a float32 buffer (after display: Colab-safe)."""
        if stat not in HISTORY_STATS:
            stat = "norm"
        history = self._watcher.history
        series = history.series(stat)
        self.send(
            {
                "type": wire.HISTORY,
                "stat": stat,
                "structure": history.structure,
                "rows": int(series.shape[0]),
                "length": int(series.shape[1]),
                "refresh": self._watcher.refreshes,
            },
            buffers=[series.tobytes()],
        )

    # -- what a saved notebook shows without a kernel ----------------------------------
    def _fallback(self) -> tuple[str, str] | None:
        # The table with the series columns the live viewer shows (gradients, update ratio, optimizer
        # state), as of display: re-display the viewer after a loop to keep its last numbers. The text
        # stays one summary line (stable in a saved notebook).
        snap = self._watcher.snapshot
        return None if snap is None else (f"StateViewer · {summary_line(snap)}", html_table(snap, series=True))

    def __repr__(self) -> str:
        snap = self._watcher.snapshot
        return f"StateViewer · {summary_line(snap)}" if snap is not None else "StateViewer"
