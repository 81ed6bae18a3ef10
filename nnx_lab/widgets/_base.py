"""What every nnx_lab widget shares: where its bundle is, what a notebook shows without a kernel,
following cells, showing itself, and the browser's requests (:mod:`nnx_lab.widgets.requests`: the
``@command`` table, acks, clicks queued while a cell runs; why it is not anywidget's
``experimental.command``/``invoke`` is said there, with the probe that decided it).
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import anywidget

from .._ipython import cell_hooks
from ..core import compat
from ..core.shell import shell_namespace
from .requests import Requests

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

#: The built front-end bundles (``js/`` -> ``nnx_lab/static/*.js``).
STATIC = pathlib.Path(__file__).resolve().parent.parent / "static"

W = TypeVar("W", bound="Widget")


def background_unsupported() -> str | None:
    """Why widget updates from a thread would not arrive here, or None when they do."""
    kernel_module = sys.modules.get("ipykernel")
    if kernel_module is None or ("marimo" in sys.modules and shell_namespace() is None):
        return "not running in an IPython kernel"  # marimo may import ipykernel, and runs none
    version = getattr(kernel_module, "__version__", "0")
    if int(version.split(".")[0]) < 6:
        return f"ipykernel {version} sends messages from the main thread only"
    if "google.colab" in sys.modules:
        return "thread-delivered widget updates are not verified on Colab"
    return None


def background_note(reason: str) -> str:
    """What a viewer says where ``reason`` keeps it from refreshing on a thread: when it refreshes
    instead (after each cell only where IPython runs cell hooks; marimo runs none)."""
    when = "after each cell and on tick()" if shell_namespace() is not None else "on tick()"
    return f"background refresh unavailable ({reason}); refreshing {when}"


_displaying = threading.local()  # .own: this thread is inside show()'s or _update_display's display call


@contextlib.contextmanager
def _own_display() -> Iterator[None]:
    before = getattr(_displaying, "own", False)
    _displaying.own = True
    try:
        yield
    finally:
        _displaying.own = before


def _shown_above() -> None:
    """The display of a widget already shown above in this cell: nothing more (see ``Widget._ipython_display_``)."""


class Widget(compat.MimebundleDisplay, Requests, anywidget.AnyWidget):
    """The base of nnx_lab's widgets (an ``anywidget.AnyWidget``); see the module's docstring.

    Subclasses set ``_esm = STATIC / "<bundle>.js"``, define ``_fallback()`` for the saved
    notebook, and ``_after_cell()`` to be called after every cell while they live.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._listen(self.on_msg)
        if isinstance(self, cell_hooks.AfterCell):
            cell_hooks.track_widget(self)

    # -- showing -----------------------------------------------------------------------------
    def show(self: W) -> W:
        """Display the widget in the running IPython, on process 0 only (``jax.distributed``); returns it."""
        try:
            from IPython import get_ipython
        except ImportError:
            return self
        jax = sys.modules.get("jax")
        shell = get_ipython()
        if shell is not None and (jax is None or jax.process_index() == 0):
            from IPython.display import display

            self._shown_in = getattr(shell, "execution_count", None)
            with _own_display():
                self._display_handle = display(self, display_id=True)
        return self

    #: the display of :meth:`show` (None until shown): :meth:`_update_display` updates it in place
    _display_handle: DisplayHandle | None = None
    #: the execution count of the cell :meth:`show` displayed this widget in
    _shown_in: int | None = None

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:  # type: ignore[override]
        """None (IPython then asks :meth:`_repr_mimebundle_`), except for a display of this widget
        in the very cell :meth:`show` displayed it in: that is the cell's value (``nnx_lab.watch(model)``
        as its last line) and would draw the same viewer a second time, so nothing is shown for it."""
        if self._closed_display or self._shown_in is None or getattr(_displaying, "own", False):
            return None
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:
            return None
        if shell is None or getattr(shell, "execution_count", None) != self._shown_in:
            return None
        return _shown_above

    @_ipython_display_.setter
    def _ipython_display_(self, value: Callable[[], None] | None) -> None:
        # ipywidgets 7's close() sets it to None (a closed widget displays as its repr): so it does here
        self._closed_display = value is None

    _closed_display = False

    def _update_display(self) -> None:
        """Send this widget's display again under the same display id, so the output the notebook
        saves (its ``text/html`` copy, what a reader without the kernel sees) holds what the widget
        shows now. The front end replaces the output; a new view renders from the same model."""
        handle = self._display_handle
        if handle is not None:
            with _own_display():
                handle.update(self)

    def close(self) -> None:
        cell_hooks.untrack_widget(self)
        super().close()

    # -- what a saved notebook shows without a kernel ----------------------------------------
    def _fallback(self) -> tuple[str, str] | None:
        """(text/plain, text/html) for frontends without the widget, or None for anywidget's own."""
        return None

    def _repr_mimebundle_(self, **kwargs: Any):
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        fallback = self._fallback()
        if fallback is not None and data is not None:  # None: anywidget shows nothing (a closed widget)
            data["text/plain"], data["text/html"] = fallback
        return bundle
