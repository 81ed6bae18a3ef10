"""Progress of a checkpoint's statistics while they stream: plain data for programs, a line in a notebook.

When a notebook shows the line and when it stays silent (a short stream, a small checkpoint, a
background thread): docs/guide/compare.md, "Progress". IPython's display handle, no widget: IPython
7 and a saved notebook work alike.
"""

from __future__ import annotations

import dataclasses
import html
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["NotebookProgress", "Progress", "auto_progress"]

#: A notebook's progress line appears once streaming has lasted this long (and then stays, as its final line).
SHOW_AFTER_S = 1.0
#: ... and only for a checkpoint of at least this many array bytes: a small one never shows it, however
#: slow the machine (its first read also compiles the statistics program; a saved notebook stays the same).
SHOW_FROM_BYTES = 64 * 2**20
#: It is redrawn at most this often.
REDRAW_S = 0.25


class DisplayHandle(Protocol):
    """What a progress display returns: ``update(bundle)`` redraws it in place."""

    def update(self, new: dict) -> None: ...


@dataclasses.dataclass(frozen=True)
class Progress:
    """Where a checkpoint's statistics stream stands (after a block, or at the end when ``done``)."""

    arrays_done: int
    arrays_total: int
    bytes_done: int
    bytes_total: int
    elapsed_s: float
    done: bool = False

    @property
    def rate(self) -> float:
        """Array bytes read per second so far."""
        return self.bytes_done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def fraction(self) -> float:
        return self.bytes_done / self.bytes_total if self.bytes_total else 1.0

    def text(self) -> str:
        """One line: ``checkpoint statistics: 3 of 8 arrays, 96.0 of 192.0 MiB (50%), 210 MB/s``.

        >>> Progress(3, 8, 96 * 2**20, 192 * 2**20, 0.5).text()
        'checkpoint statistics: 3 of 8 arrays, 96.0 of 192.0 MiB (50%), 201 MB/s'
        >>> Progress(8, 8, 192 * 2**20, 192 * 2**20, 1.0, done=True).text()
        'checkpoint statistics: 8 arrays, 192.0 MiB read in 1.0 s (201 MB/s)'
        """
        mib, rate = 2**20, f"{self.rate / 1e6:.0f} MB/s"
        if self.done:
            return (
                f"checkpoint statistics: {self.arrays_done} arrays, {self.bytes_done / mib:.1f} MiB read in "
                f"{self.elapsed_s:.1f} s ({rate})"
            )
        return (
            f"checkpoint statistics: {self.arrays_done} of {self.arrays_total} arrays, {self.bytes_done / mib:.1f} of "
            f"{self.bytes_total / mib:.1f} MiB ({self.fraction:.0%}), {rate}"
        )

    def bundle(self) -> dict:
        """The display's MIME bundle: the line as text, and in HTML beside a progress bar."""
        line = html.escape(self.text())
        bar = "" if self.done else f'<progress value="{self.fraction:.3f}" max="1" style="width:12em"></progress> '
        return {"text/plain": self.text(), "text/html": f"<div>{bar}<code>{line}</code></div>"}


class NotebookProgress:
    """A ``progress`` callback that shows :class:`Progress` as one display updated in place.

    ``display(bundle)`` shows a MIME bundle and returns a handle with ``update(bundle)`` (IPython's
    ``display(..., raw=True, display_id=True)`` by default; a test passes its own)."""

    def __init__(
        self,
        display: Callable[[dict], DisplayHandle] | None = None,
        show_after_s: float | None = None,
        redraw_s: float | None = None,
        show_from_bytes: int | None = None,
    ):
        self._display = display or _ipython_display
        self._show_after_s = SHOW_AFTER_S if show_after_s is None else show_after_s  # the module's, read now
        self._redraw_s = REDRAW_S if redraw_s is None else redraw_s
        self._show_from_bytes = SHOW_FROM_BYTES if show_from_bytes is None else show_from_bytes
        self._handle: DisplayHandle | None = None
        self._drawn = -float("inf")

    def __call__(self, p: Progress) -> None:
        if self._handle is None:
            if p.elapsed_s < self._show_after_s or p.bytes_total < self._show_from_bytes:
                return  # short streams and small checkpoints leave no output
            self._handle = self._display(p.bundle())
            self._drawn = time.monotonic()
            return
        now = time.monotonic()
        if p.done or now - self._drawn >= self._redraw_s:
            self._handle.update(p.bundle())
            self._drawn = now


def _ipython_display(bundle: dict) -> DisplayHandle:
    # Loaded by ``import IPython`` (so in every kernel, where alone this is used): core imports no UI library.
    ipd = sys.modules["IPython.display"]
    handle = ipd.DisplayHandle()
    ipd.display(bundle, raw=True, display_id=handle.display_id)

    class _Raw:  # update() with the raw bundle (DisplayHandle.update passes keywords on to update_display)
        def update(self, new: dict) -> None:
            handle.update(new, raw=True)

    return _Raw()


def in_notebook() -> bool:
    """Whether this runs in an IPython kernel with a front end (Jupyter, Colab): not a script, not a terminal."""
    ipython = sys.modules.get("IPython")  # never imported here: a script has none
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def auto_progress(progress: Callable[[Progress], None] | bool | None) -> Callable[[Progress], None] | None:
    """``progress=`` as given: a callable is used, False shows nothing, None a notebook line when in one."""
    if callable(progress):
        return progress
    # a background thread's display would land in whatever cell runs then (the viewer's reader has its own status)
    if progress is None and in_notebook() and threading.current_thread() is threading.main_thread():
        return NotebookProgress()
    if progress not in (None, False, True):
        raise TypeError(f"progress must be a callable taking a Progress, None or False; got {type(progress).__name__}")
    return NotebookProgress() if progress is True else None
