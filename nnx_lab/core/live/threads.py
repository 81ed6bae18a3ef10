"""nnx_lab's daemon threads: started registered, asked to stop and waited for when the interpreter
exits (a thread torn down inside XLA crashes the process). See ``_engine.py`` for which threads exist."""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Callable, Protocol

from ..text import one_line

# nnx_lab's daemon threads, and how to ask each to stop: joined when the interpreter exits (_join_at_exit).
_threads: dict[threading.Thread, Callable[[], None] | None] = {}
_threads_lock = threading.Lock()
_exiting = False  # the interpreter's exit has begun: a thread asked for now runs nothing
#: the longest the interpreter's exit waits for nnx_lab's threads, seconds in all: a compile already
#: running is waited for (torn down inside XLA, it crashes the process), and on a loaded machine it
#: takes tens of seconds; a thread stuck longer (a hung device) is given up on with a warning
EXIT_WAIT_S = 300.0
#: after this many seconds of waiting, the exit says what it waits for
EXIT_NOTE_S = 10.0


def exiting() -> bool:
    """Whether the interpreter's exit has begun (see :func:`start_thread`)."""
    return _exiting


def start_thread(
    target: Callable[..., object], name: str, *, stop: Callable[[], None] | None = None, **kwargs: object
) -> threading.Thread:
    """Start a daemon thread that interpreter exit waits for (up to :data:`EXIT_WAIT_S` in all),
    calling ``stop()`` first if given. A daemon thread still inside jax's C++ when Python finalizes is
    torn down there and aborts or crashes the process ("terminate called after throwing...",
    SIGSEGV): a script that ends right after a loop's last refresh would otherwise crash on its
    way out. Asked for once the exit has begun (by a thread exit waits for: a published refresh
    compiles its update ratio's program on a thread of its own), the thread runs nothing and never
    touches jax: nobody is left to use its work, and jax is torn down next."""

    def run() -> None:
        try:
            if work is not None:
                work(**kwargs)
        finally:
            with _threads_lock:
                _threads.pop(thread, None)

    thread = threading.Thread(target=run, name=name, daemon=True)
    with _threads_lock:
        work = None if _exiting else target
        _threads[thread] = stop
    if work is None:
        logging.getLogger("nnx_lab").debug("%s: not run, the interpreter is exiting", name)
    try:
        thread.start()
    except BaseException:  # never started: nothing to wait for at exit
        with _threads_lock:
            _threads.pop(thread, None)
        raise
    return thread


def _join_at_exit() -> None:
    """Ask nnx_lab's threads to stop and wait for them (and for any they start meanwhile, which
    run nothing) until none is left. Registered with ``threading._register_atexit``: it runs as
    soon as the main thread has finished, before Python joins non-daemon threads and before any
    ``atexit`` handler, jax's included (``clean_up`` clears the backends a thread of ours may still
    use; ``atexit`` handlers run last-registered first, so jax imported after nnx_lab would go first)."""
    import time

    global _exiting
    with _threads_lock:
        _exiting = True
    log = logging.getLogger("nnx_lab")
    start = time.monotonic()
    deadline, note_at = start + EXIT_WAIT_S, start + EXIT_NOTE_S
    asked: set[threading.Thread] = set()
    while True:
        with _threads_lock:
            threads = list(_threads.items())
        now = time.monotonic()
        if not threads or now >= deadline:
            break
        if note_at <= now:
            note_at = deadline
            log.warning(
                "exit waits for nnx_lab threads still working (a compile, a result on its way): %s",
                ", ".join(sorted(t.name for t, _ in threads)),
            )
        for thread, stop in threads:
            if stop is not None and thread not in asked:
                asked.add(thread)
                try:
                    stop()
                except Exception:  # noqa: BLE001 - the others are still waited for
                    log.exception("stopping %s at exit failed", thread.name)
        for thread, _ in threads:
            thread.join(max(0.0, min(note_at, deadline) - time.monotonic()))
    if threads:
        log.warning(
            "exiting while nnx_lab threads still work after %.0f s: %s (the process may abort)",
            EXIT_WAIT_S,
            ", ".join(sorted(t.name for t, _ in threads)),
        )


# threading._register_atexit (CPython 3.9+) runs before threads are joined and before atexit's
# handlers; where it is missing, atexit (after the handlers of modules imported later, e.g. jax's).
getattr(threading, "_register_atexit", atexit.register)(_join_at_exit)


class _Waitable(Protocol):
    """What ``when_ready`` waits on: anything whose ``wait()`` returns once the result is there."""

    def wait(self) -> object: ...


def when_ready(pending: _Waitable, then: Callable[[], None], name: str) -> None:
    """Call ``then()`` on a daemon thread once ``pending.wait()`` returns (or fails): a result on
    its way from the device is shown when it arrives, without holding up the caller."""

    def run() -> None:
        try:
            pending.wait()
        except Exception as e:  # noqa: BLE001 - then() reads the result again and shows its error
            logging.getLogger("nnx_lab").debug("%s: waiting failed: %s", name, one_line(e))
        then()

    start_thread(run, name)
