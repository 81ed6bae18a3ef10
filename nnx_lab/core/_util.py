"""Small helpers every layer needs, defined once: one-line messages, safe reprs, binding names.

No jax or IPython import here: the extension and the widgets use these too.

>>> one_line(ValueError("first line\\nsecond line"))
'ValueError: first line'
>>> safe_repr(type("Evil", (), {"__repr__": lambda self: 1 / 0})())
'<repr failed: ZeroDivisionError>'
>>> clip("x" * 300, 10)
'xxxxxxxxx…'
>>> check_name("__builtins__")
Traceback (most recent call last):
...
ValueError: --as '__builtins__': names starting with __ belong to Python and IPython; choose another name
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import gc
import json
import keyword
import logging
import re
import threading
from typing import Any, Callable, Mapping

#: the longest user text echoed back in a message (a name, an option, a path)
ECHO_CHARS = 200

# Names IPython keeps in the user namespace itself; rebinding one breaks the shell.
_IPYTHON_NAMES = frozenset({"get_ipython", "In", "Out", "exit", "quit", "_", "__", "___", "_dh", "_ih", "_oh", "_sh"})


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(text: Any, limit: int = ECHO_CHARS) -> str:
    """User text as a message may quote it: at most ``limit`` characters, the rest counted (a 1 MB
    key or path never makes a 1 MB status line). Non-strings are quoted by their repr.

    >>> quote("blocks"), quote("k" * 1000, 10)
    ('blocks', 'kkkkkkkkkk… (990 more characters)')
    """
    text = text if isinstance(text, str) else safe_repr(text)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def quote_repr(x: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(x)`` of a user value (a name, a prefix) as :func:`quote` quotes text.

    >>> quote_repr("x" * 500, 4)
    "'xxx… (498 more characters)"
    """
    return quote(safe_repr(x), limit)


def safe_repr(x: Any, limit: int | None = None) -> str:
    """``repr(x)``, or ``<repr failed: ErrorType>`` when that repr raises (user objects can)."""
    try:
        text = repr(x)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
    except Exception as e:  # noqa: BLE001 - any user __repr__ may raise anything
        return f"<repr failed: {type(e).__name__}>"
    return clip(text, limit) if limit else text


def json_key(key: Any) -> Any:
    """A path key as JSON can carry it: ints and strings as they are, anything else as its text.

    >>> json_key(3), json_key("kernel"), json_key(True)
    (3, 'kernel', 'True')
    """
    if isinstance(key, (int, str)) and not isinstance(key, bool):
        return key
    try:
        return str(key)
    except Exception as e:  # noqa: BLE001 - a user key's __str__ may raise
        return f"<str failed: {type(e).__name__}>"


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return clip(lines[0] if lines else "", limit)


def one_line(x: Any, limit: int = 300) -> str:
    """An exception (``Type: first line``) or a value's repr, as one line of at most ``limit`` characters.

    Multi-line messages (jax's TracerBoolConversionError, a user filter raising ``"a\\nb"``) keep
    their first non-empty line.
    """
    if isinstance(x, BaseException):
        try:
            text = str(x)
        except Exception as e:  # noqa: BLE001 - a user exception's __str__ may raise
            text = f"<str failed: {type(e).__name__}>"
        text = first_line(text, limit)
        return clip(f"{type(x).__name__}: {text}" if text else type(x).__name__, limit)
    return first_line(safe_repr(x), limit)


def a_kind(name: str) -> str:
    """``name`` with its article: ``a_kind("int")`` is ``'an int'``."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


#: the largest browser message a widget reads (a click is a few hundred bytes; 100k paths are not a click)
MAX_MESSAGE_BYTES = 65_536


def message_problem(content: Any) -> str | None:
    """Why a browser message is refused before it is read, or None: not an object, or too large.

    >>> message_problem({"type": "view", "name": "x" * 100_000})
    'message of 100,028 bytes refused (at most 65,536)'
    """
    if not isinstance(content, dict):
        return f"message must be an object, not {type(content).__name__}"
    size = len(json.dumps(content, default=str))
    if size > MAX_MESSAGE_BYTES:
        return f"message of {size:,} bytes refused (at most {MAX_MESSAGE_BYTES:,})"
    return None


def message_id(content: Any) -> Any:
    """A message's ``id`` as it may be echoed back: an int or a short string, else None."""
    rid = content.get("id") if isinstance(content, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (int, str)) or (isinstance(rid, str) and len(rid) > 64):
        return None
    return rid


#: bounds of the numeric options (inclusive), shared by the Python API and the magics
MAX_RATE = 100.0  # refreshes per second: more says nothing a person can see
MAX_BINS = 1024  # histogram bins per array: more is a large message for a 200-pixel cell
MAX_ROWS = 1_000_000


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check_number(
    value: Any, what: str, low: float, high: float, *, integer: bool = False, low_open: bool = False
) -> Any:
    """``value`` if it is a finite number in [low, high] (``(low, high]`` with ``low_open``); else ValueError.

    NaN, infinities and booleans are refused: a NaN rate stops a throttle and is not valid JSON.

    >>> check_number(2, "max_rate", 0, 100, low_open=True)
    2
    >>> check_number(float("nan"), "max_rate", 0, 100, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: max_rate must be a number in (0, 100], got nan
    """
    kind = "an integer" if integer else "a number"
    span = f"{'(' if low_open else '['}{_number_text(low)}, {_number_text(high)}]"
    ok = (isinstance(value, int) if integer else isinstance(value, (int, float))) and not isinstance(value, bool)
    if ok:
        try:
            ok = (low < value if low_open else low <= value) and value <= high
        except TypeError:
            ok = False
    if not ok:
        raise ValueError(f"{what} must be {kind} in {span}, got {clip(safe_repr(value), 60)}")
    return value


def check_name(
    name: Any,
    *,
    what: str = "--as",
    namespace: Mapping[str, Any] | None = None,
    target: Any = None,
    target_text: str | None = None,
) -> str:
    """``name`` if nnx_lab may bind it in the user namespace; otherwise ValueError saying why.

    Refused: non-identifiers, keywords, builtins, IPython's own names (``In``, ``Out``, ``_``,
    ``_i1``, ``_oh``, ``get_ipython``, ...), dunder names, and the name that holds ``target`` (or
    is ``target_text``): rebinding any of those breaks the shell or loses the model.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{what} {clip(safe_repr(name), 60)} is not a valid Python name")
    if name.startswith("__"):
        raise ValueError(f"{what} {name!r}: names starting with __ belong to Python and IPython; choose another name")
    if name in _IPYTHON_NAMES or name.startswith(("_i", "_o")) or (name[:1] == "_" and name[1:].isdigit()):
        raise ValueError(f"{what} {name!r} is one of IPython's own names (input/output history); choose another name")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ValueError(f"{what} {name!r} is a Python keyword; choose another name")
    if hasattr(builtins, name):
        raise ValueError(f"{what} {name!r} would hide Python's builtin of that name; choose another name")
    if target_text is not None and name == target_text.strip():
        raise ValueError(f"{what} {name!r} would replace TARGET itself; choose another name")
    if namespace is not None and target is not None and namespace.get(name) is target:
        raise ValueError(f"{what} {name!r} holds the model itself; choose another name")
    return name


def is_python_name(text: Any) -> bool:
    """Whether ``text`` is a name Python can bind or look up: an identifier that is not a keyword
    (soft keywords such as ``match`` are names). :func:`check_name` adds what nnx_lab may bind.

    >>> is_python_name("loss_fn"), is_python_name("match"), is_python_name("class"), is_python_name("f(x)")
    (True, True, False, False)
    """
    return isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)


def is_dotted_name(text: Any) -> bool:
    """Whether ``text`` is a name or names joined by dots (``model``, ``trainer.model``): what can be
    looked up again without evaluating anything.

    >>> is_dotted_name("trainer.model"), is_dotted_name("model.blocks[0]"), is_dotted_name("a..b")
    (True, False, False)
    """
    return isinstance(text, str) and all(is_python_name(part) for part in text.split("."))


_PATH_TEXT = re.compile(r"(?P<first>[A-Za-z_]\w*)((\.\w+)|(\[\d+\])|(/\w+))*")


def looks_like_path(text: str) -> bool:
    """Whether ``text`` is written as a module path (``blocks[0].attn``, ``blocks/0/attn``,
    ``blocks.0.attn``): names, indices and attribute steps only, starting with a Python name.

    >>> looks_like_path("blocks[7]"), looks_like_path("blocks.0.attn"), looks_like_path("None")
    (True, True, False)
    >>> looks_like_path("nnx.PathContains('a')"), looks_like_path("1/0")
    (False, False)
    """
    match = _PATH_TEXT.fullmatch(text)
    return match is not None and is_python_name(match["first"])


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
    target: Callable[..., None], name: str, *, stop: Callable[[], None] | None = None, **kwargs: Any
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


def when_ready(pending: Any, then: Callable[[], None], name: str) -> None:
    """Call ``then()`` on a daemon thread once ``pending.wait()`` returns (or fails): a result on
    its way from the device is shown when it arrives, without holding up the caller."""

    def run() -> None:
        try:
            pending.wait()
        except Exception as e:  # noqa: BLE001 - then() reads the result again and shows its error
            logging.getLogger("nnx_lab").debug("%s: waiting failed: %s", name, one_line(e))
        then()

    start_thread(run, name)


_gc_lock = threading.Lock()
_gc_pausing = 0  # how many paused_gc blocks are running (any thread)
_gc_resume = False  # whether the last of them turns the collector back on


@contextlib.contextmanager
def paused_gc():
    """Python's cyclic garbage collector off for the block (as it was after it; blocks may nest and
    run on several threads at once).

    A walk or a refresh of a large model makes hundreds of thousands of short-lived objects that
    reference counting frees; each time enough of them are alive at once the collector runs, and
    its full collections traverse every object of the process (a 100,000-Variable model is a
    million objects: seconds each). Nothing a snapshot makes is cyclic garbage."""
    global _gc_pausing, _gc_resume
    with _gc_lock:
        if _gc_pausing == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pausing += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausing -= 1
            if _gc_pausing == 0 and _gc_resume:
                gc.enable()
