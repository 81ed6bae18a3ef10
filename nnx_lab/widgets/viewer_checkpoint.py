"""``watch("path/to/checkpoint")``: an Orbax checkpoint as the viewer's static table.

The viewer's front end (``static/viewer.js``) over a :class:`~nnx_lab.Snapshot` of the checkpoint
(``nnx_lab.snapshot(path)``, read without restoring): a checkpoint of more than
:data:`ROWS_FIRST_BYTES` shows the rows from its metadata at once and its statistics when they
have streamed (from a thread, where the kernel takes widget messages from threads; the display is
sent again then, so a saved notebook keeps them); a smaller one is shown with its statistics. Nothing trains here, so there is no throttle, history or scalars:
"refresh now" reads the directory again (a run that is still writing checkpoints).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import traitlets

from ..core.checks import is_dotted_name
from ..core.live.threads import start_thread
from ..core.render import html_table, summary_line
from ..core.snapshot import Snapshot, snapshot
from ..core.stats import STAT_NAMES
from ..core.text import first_line
from ..core.training import NonfiniteAlert
from . import traits, wire
from ._base import STATIC, Widget, background_unsupported
from .requests import AckFields, Buffers, command

if TYPE_CHECKING:
    from ..core.checkpoint import Progress

__all__ = ["CheckpointViewer", "checkpoint_path", "notebook_namespace"]

_log = logging.getLogger("nnx_lab")

#: ``watch(path)`` shows a checkpoint of more array bytes than this rows first, statistics after
#: (streamed from disk: seconds per GiB); a smaller one's table is shown with its statistics.
ROWS_FIRST_BYTES = 256 * 2**20


def notebook_namespace() -> dict | None:
    """IPython's user namespace, or None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return None if shell is None else shell.user_ns


def checkpoint_path(obj: object, namespace: dict | None = None) -> str | None:
    """The directory ``watch(obj)`` should read as a checkpoint, or None (a model, or a name to follow).

    A ``pathlib.Path`` (any ``os.PathLike``) is a path; a ``str`` is one unless it is a Python name
    (``model``, ``trainer.model``) that is bound in the notebook or that names no directory: a name
    is followed, as before, and ``"ckpt"`` (a directory, no variable of that name) is read. A ``str``
    that is neither a name nor anything path-like (``"model[0]"``) is a bad name to follow.
    """
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if not isinstance(obj, str):
        return None
    text = obj.strip()
    if not is_dotted_name(text):
        # "ckpt/", "~/runs/7", an existing file: a path; "model[0]" names nothing on disk and is no
        # path either: a bad name to follow, said as such.
        looks_like_path = os.sep in text or "/" in text or text.startswith("~") or os.path.exists(obj)
        return obj if looks_like_path else None
    bound = namespace is not None and text.split(".")[0] in namespace
    return obj if not bound and os.path.isdir(obj) else None


class CheckpointViewer(Widget):
    """The viewer's table over an Orbax checkpoint directory; create it with ``nnx_lab.watch(path)``.

    ``snapshot`` (the trait) holds the rows and, once read, the statistics; ``last_snapshot`` the
    :class:`~nnx_lab.Snapshot`; ``refresh()`` reads the directory again. ``alert`` is the live
    viewer's NaN/Inf banner (``core.training.NonfiniteAlert``, each read of the statistics counted
    as a refresh, at step 0): the first array read with a NaN/Inf, kept until ``clear_alert()``.

    Raises:
      TypeError: (``core.checkpoint.CheckpointError``) the path is no checkpoint, in one line.
    """

    _esm = STATIC / "viewer.js"
    snapshot = traits.Payload(traits.ViewerSnapshot).tag(sync=True)
    status = traits.Payload(traits.ViewerStatus).tag(sync=True)
    sparkline_stat = traitlets.Unicode("norm").tag(sync=True)
    alert = traits.Payload(traits.Alert).tag(sync=True)

    def __init__(self, path: str | os.PathLike, *, stats: bool = True, rows_first: bool | None = None, **kwargs: Any):
        self.path = os.fspath(path)
        rows = snapshot(self.path, stats=False)  # the metadata alone: a CheckpointError for no checkpoint
        super().__init__(**kwargs)
        self._snap: Snapshot = rows
        self._refreshes = 0
        self._alert = NonfiniteAlert()  # the live viewer's NaN/Inf banner, fed each read of the statistics
        self._reads = 0  # reads of the statistics: the alert's refresh numbers
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._stats = stats
        self._set(rows, "rows from the metadata" + ("; reading the statistics\u2026" if stats else ""), "live")
        if rows_first is None:  # a big checkpoint's rows at once; a small one's table with its numbers, in one display
            rows_first = rows.totals["all"]["bytes"] > ROWS_FIRST_BYTES
        if stats:
            if rows_first and background_unsupported() is None:
                self._reader = start_thread(self._read, "nnx_lab-checkpoint")
            else:
                self._read()

    @property
    def last_snapshot(self) -> Snapshot:
        """The checkpoint's Snapshot (the statistics still being read are waited for)."""
        if self._reader is not None:
            self._reader.join()
        return self._snap

    def refresh(self) -> None:
        """Read the directory again (its rows, then its statistics)."""
        if self._reader is not None and self._reader.is_alive():
            return
        try:
            rows = snapshot(self.path, stats=False)
        except TypeError as e:  # the directory went away or was rewritten halfway: said, not raised
            self._set(self._snap, f"cannot read {self.path!r} again: {first_line(str(e))}", "error")
            return
        self._set(rows, "reading the statistics\u2026" if self._stats else "rows from the metadata", "live")
        if self._stats:
            self._read()

    def _progress(self, p: Progress) -> None:
        """The stream's progress in the status line (not a notebook line of its own: the viewer has one)."""
        now = time.perf_counter()
        if p.done or now - self._progress_at < 0.25:
            return
        self._progress_at = now
        self.status = {
            **self.status,
            "message": f"checkpoint {self.path} \u00b7 reading the statistics: {p.arrays_done} of "
            f"{p.arrays_total} arrays, {100 * p.fraction:.0f}%",
        }

    _progress_at = 0.0

    def _read(self) -> None:
        start = time.perf_counter()
        try:
            snap = snapshot(self.path, progress=self._progress)  # the rows read again, with statistics
        except Exception as e:  # noqa: BLE001 - boundary (a thread): the status says it, the rows stay
            _log.warning("nnx_lab: reading the statistics of %s failed", self.path, exc_info=True)
            self._set(self._snap, f"statistics not read: {type(e).__name__}: {first_line(str(e))}", "error")
            return
        self._set(snap, f"statistics read in {time.perf_counter() - start:.2f} s", "static", stats=True)
        if threading.current_thread() is not threading.main_thread():
            self._update_display()  # shown with its rows alone: the saved notebook's copy gets the statistics

    def clear_alert(self) -> None:
        """Dismiss the NaN/Inf banner; the next read of the statistics that sees a NaN/Inf sets it again."""
        with self._lock:
            self._alert.clear()
            self.alert = self._alert.to_dict()

    def _set(self, snap: Snapshot, message: str, state: str, *, stats: bool = False) -> None:
        """Show ``snap``; ``stats``: its statistics were read (the NaN/Inf alert looks at them)."""
        with self._lock:
            self._snap = snap
            self._refreshes += 1
            payload = snap.to_dict()
            payload["refresh"] = self._refreshes
            payload["structure"] = 0
            self.snapshot = payload
            if stats:  # not the rows from the metadata alone: they hold no counts ("now clean" would be wrong)
                self._reads += 1
                self._alert.observe(snap, refresh=self._reads, step=0)
                self.alert = self._alert.to_dict()
            self.status = {
                "state": state,
                "message": f"checkpoint {self.path} \u00b7 {message}",
                "last_refresh": time.time(),
                "refreshes": None,
            }

    def close(self) -> None:
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join()
        super().close()

    # -- the browser's messages (those of the live viewer that mean something here) ---------------
    @command(wire.STATS)
    def _stats_request(self, content: dict, _buffers: Buffers) -> None:
        snap = self._snap
        buffer, exact = snap.stats_buffer()
        self.send(
            {
                "type": wire.STATS,
                "refresh": self._refreshes,
                "structure": 0,
                "rows": len(snap),
                "names": list(STAT_NAMES),
                "exact": exact,
            },
            buffers=[buffer],
        )

    @command(wire.REFRESH)
    def _refresh_request(self, content: dict, _buffers: Buffers) -> None:
        if self._reader is not None and self._reader.is_alive():
            return
        if background_unsupported() is None:
            self._reader = start_thread(self.refresh, "nnx_lab-checkpoint")
        else:
            self.refresh()

    @command(wire.CLEAR_ALERT)
    def _clear_alert_request(self, content: dict, _buffers: Buffers) -> None:
        self.clear_alert()

    @command(wire.COMPARE_TO)
    def _compare_to_request(self, content: dict, _buffers: Buffers) -> AckFields:
        return {
            "state": "error",
            "message": "compare to: a checkpoint's table does not train; nnx_lab.compare(path, model) compares it",
        }

    # -- what a saved notebook shows without a kernel ----------------------------------------
    def _fallback(self) -> tuple[str, str]:
        return f"CheckpointViewer · {summary_line(self._snap)}", html_table(self._snap)

    def __repr__(self) -> str:
        return f"CheckpointViewer · {summary_line(self._snap)}"
