"""Clicks made while a cell runs: received at once where the kernel allows it, applied between steps.

A Jupyter kernel runs widget messages on its main thread between cells, so a click in a panel
while a training cell runs waits until that cell ends. ipykernel 7 can instead hand a comm's
messages to a *subshell*, a thread of its own that reads them while the main thread is busy
(``comm._reply_subshell_for`` decides the route, on the kernel's shell-channel thread).

:func:`route_while_busy` uses that for one widget: while the main shell is busy, its messages go
to one nnx_lab subshell. There the handler never touches the model: it puts the request in this
queue and acknowledges it as *queued*. The main thread applies queued requests with
:func:`drain`, which runs at each ``tick()`` / ``track()`` step of a training loop (panels and
viewers), after every cell, and as soon as the main event loop is free. Where the kernel has no
subshells (ipykernel < 7, Colab, VS Code's own kernels), messages simply wait for the cell to end,
and the browser shows them as pending until then.

Cheap to import: no jax, no widgets, no ipykernel until a widget asks to be routed.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ipykernel.kernelbase import Kernel

_log = logging.getLogger("nnx_lab")

_lock = threading.Lock()
_queue: collections.deque[Callable[[], None]] = collections.deque()
_subshell: dict[str, str] = {}  # "id": the nnx_lab subshell of this kernel, once made


def on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def post(apply: Callable[[], None]) -> None:
    """Queue ``apply`` for the main thread (called from a subshell thread) and ask the main event
    loop to run it as soon as it is free."""
    with _lock:
        _queue.append(apply)
    kernel = _kernel()
    loop = getattr(kernel, "io_loop", None)
    if loop is not None:
        try:
            loop.add_callback(drain)  # thread-safe; runs when the busy cell yields or ends
        except Exception:  # noqa: BLE001 - boundary: the kernel's loop (closing?); the cell's end drains it
            _log.debug("nnx_lab: a queued widget message waits for the cell's end", exc_info=True)


def pending() -> int:
    with _lock:
        return len(_queue)


def drain() -> int:
    """Apply every queued request, in order, on the main thread. Returns how many ran; never raises."""
    if not _queue or not on_main_thread():  # nothing queued: what a training loop's every tick sees
        return 0
    done = 0
    while True:
        with _lock:
            if not _queue:
                return done
            apply = _queue.popleft()
        try:
            apply()
        except Exception:  # noqa: BLE001 - boundary: one widget message's handler; the others still run
            _log.warning("nnx_lab: a widget message queued while a cell ran failed", exc_info=True)
        done += 1


def busy_note(routing: str | None) -> str:
    """What a panel shows beside a click sent while a cell runs, when ``routing`` says the kernel
    cannot read it then (Colab, VS Code, ipykernel < 7): it stays pending until the cell ends.

    >>> busy_note(None)
    ''
    >>> busy_note("no subshells")
    'waiting for the running cell to end (this kernel reads clicks only between cells)'
    """
    return (
        "" if routing is None else "waiting for the running cell to end (this kernel reads clicks only between cells)"
    )


def route_while_busy(widget: object) -> str | None:
    """Route ``widget``'s browser messages to the nnx_lab subshell while the main shell is busy.

    Returns ``None`` when routed, else the reason it cannot be (then messages wait for the cell
    to end, as everywhere else).
    """
    kernel = _kernel()
    if kernel is None:
        return "not running in an IPython kernel"
    comm = getattr(widget, "comm", None)
    original = getattr(comm, "_reply_subshell_for", None)
    lock = getattr(kernel, "_main_asyncio_lock", None)
    if comm is None or original is None or lock is None or getattr(kernel, "shell_channel_thread", None) is None:
        return "this kernel cannot read widget messages while a cell runs (needs ipykernel 7 subshells)"
    try:
        subshell = _nnx_lab_subshell(kernel)
    except Exception as e:  # noqa: BLE001 - boundary: ipykernel's internals; the reason is the returned note
        _log.debug("nnx_lab: no subshell", exc_info=True)
        from ..core.text import one_line

        return f"could not start a subshell ({one_line(e)})"

    def route(data: object, default: str | None) -> str | None:
        # While the main shell runs a cell, ours. (Not ipykernel's own choice: it sends a comm's
        # messages back to where the comm last published from, the busy main shell, even when
        # the frontend addressed them to a subshell, as JupyterLab 4.4+ does.)
        if lock.locked():
            return subshell
        return original(data, default)

    comm._reply_subshell_for = route
    return None


def _kernel() -> Kernel | None:
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return None
    return Kernel.instance() if Kernel.initialized() else None


def _nnx_lab_subshell(kernel: Kernel) -> str:
    """One subshell per kernel, made on the shell-channel thread as a create_subshell_request would."""
    channel = kernel.shell_channel_thread
    manager = channel.manager
    known = _subshell.get("id")
    if known is not None and known in manager.list_subshell():
        return known
    made: dict[str, str] = {}
    failed: list[BaseException] = []
    ready = threading.Event()

    def create() -> None:
        try:
            made["id"] = manager._create_subshell()
        except BaseException as e:  # reported to the caller below
            failed.append(e)
        finally:
            ready.set()

    channel.io_loop.add_callback(create)
    if not ready.wait(10):
        raise TimeoutError("the shell channel thread did not answer")
    if failed:
        raise failed[0]
    _subshell["id"] = made["id"]
    return made["id"]
