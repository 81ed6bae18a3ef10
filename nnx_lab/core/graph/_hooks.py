"""Module-class methods wrapped to see module calls: one patcher for every feature that needs it.

Captures (method outputs), the summary's trace and ``find_nonfinite``'s recorder each wrap
``__call__`` and the public methods of module classes while they run. Each installed its own wrapper
on the class, so two of them overlapping could undo each other: the first to finish restored the
function it had found, which was the other's wrapper, and a class stayed wrapped after both ended.

Here one function stands on the class per wrapped method, whoever asked: it calls the composition
of the *hooks* registered for that method (each owner's ``wrap(fn) -> fn``, applied in the order
they were added, around the original function). Owners add and remove their hooks with reference
counts; the composition is rebuilt on each change, and the original goes back on the class when the
last hook of the last owner is removed (unless something else was put there meanwhile).

:class:`Recording` is the summary's trace and ``find_nonfinite``'s run: one run's module calls given
to a :class:`Recorder` (each feature's own records), hooked for the run, always unhooked.

>>> from flax import nnx
>>> class Twice(nnx.Module):
...     def __call__(self, x):
...         return 2 * x
>>> original = Twice.__call__
>>> keys = hook({(Twice, "__call__")}, "plus one", lambda fn: lambda self, x: fn(self, x) + 1)
>>> Twice()(3)
7
>>> _ = hook(keys, "times ten", lambda fn: lambda self, x: 10 * fn(self, x))
>>> Twice()(3), hooked() == {Twice: ["__call__"]}
(70, True)
>>> unhook(keys, "plus one")
>>> Twice()(3)
60
>>> unhook(keys, "times ten")
>>> Twice.__call__ is original, hooked()
(True, {})
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from typing import Any, Callable, Generic, Iterable, TypeVar

from flax import nnx

Key = tuple[type, str]  # (class, method name)
C = TypeVar("C")  # what a recorder keeps per call
Wrap = Callable[[Callable], Callable]  # an owner's hook: the function to call -> what to call instead

#: The attribute that marks the function standing on a class for a hooked method.
MARK = "__nnx_lab_hooked__"

_lock = threading.RLock()


@dataclasses.dataclass
class _Entry:
    original: Callable
    hooks: dict[str, tuple[Wrap, int]]  # owner -> (its wrap, how many times it asked), in order added
    composed: Callable
    installed: Callable | None = None


_entries: dict[Key, _Entry] = {}


def _compose(entry: _Entry) -> None:
    fn = entry.original
    for wrap, _ in entry.hooks.values():
        fn = wrap(fn)
    entry.composed = fn


def _installed(entry: _Entry) -> Callable:
    @functools.wraps(entry.original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return entry.composed(self, *args, **kwargs)

    setattr(method, MARK, entry.original)
    return method


def original(fn: Any) -> Any:
    """The user's function behind ``fn`` where ``fn`` is what this module put on a class; else ``fn``."""
    return getattr(fn, MARK, fn)


def hook(keys: Iterable[Key], owner: str, wrap: Wrap) -> list[Key]:
    """Wrap each method ``(class, name)`` of ``keys`` with ``owner``'s ``wrap`` (once per owner, reference
    counted: every call is matched by an :func:`unhook`). Returns the keys, to unhook with."""
    done: list[Key] = []
    with _lock:
        for key in keys:
            cls, name = key
            current = vars(cls)[name]
            entry = _entries.get(key)
            if entry is not None and current is not entry.installed:  # redefined meanwhile: wrap the new one
                entry.original, entry.installed = original(current), None
            if entry is None:
                entry = _entries[key] = _Entry(original(current), {}, current)
            first, count = entry.hooks.get(owner, (wrap, 0))
            entry.hooks[owner] = (first, count + 1)
            _compose(entry)
            if entry.installed is None:
                entry.installed = _installed(entry)
                setattr(cls, name, entry.installed)
            done.append(key)
    return done


def unhook(keys: Iterable[Key], owner: str) -> None:
    """Undo one :func:`hook` of ``owner`` on each of ``keys``; a method left with no hook is restored."""
    with _lock:
        for key in keys:
            entry = _entries.get(key)
            if entry is None or owner not in entry.hooks:
                continue
            wrap, count = entry.hooks[owner]
            if count > 1:
                entry.hooks[owner] = (wrap, count - 1)
                continue
            del entry.hooks[owner]
            _compose(entry)
            if not entry.hooks:
                del _entries[key]
                cls, name = key
                if vars(cls).get(name) is entry.installed:  # not redefined meanwhile by someone else
                    setattr(cls, name, entry.original)


def hooked(owner: str | None = None) -> dict[type, list[str]]:
    """The classes with wrapped methods right now (``owner``'s only, where given): empty when none."""
    out: dict[type, list[str]] = {}
    with _lock:
        for (cls, name), entry in _entries.items():
            if owner is None or owner in entry.hooks:
                out.setdefault(cls, []).append(name)
    return out


def module_methods(classes: Iterable[type]) -> list[tuple[type, str]]:
    """(class, name) of the methods of ``classes`` a caller may wrap (:func:`hook`) to see
    module calls: ``__call__`` and the public functions defined on module classes (never on nnx.Module
    and flax's base classes, nor nnx.Module's own methods nnx.tabulate copied onto a subclass), each
    once; one already wrapped counts as the function it wraps."""
    base = set(inspect.getmro(nnx.Module))
    out: dict = {}
    for cls in classes:
        for klass in inspect.getmro(cls):
            if klass in base or not (isinstance(klass, type) and issubclass(klass, nnx.Module)):
                continue
            for name, fn in list(vars(klass).items()):
                fn = original(fn)
                if (
                    inspect.isfunction(fn)
                    and (name == "__call__" or not name.startswith("_"))
                    and not any(vars(b).get(name) is fn for b in base)
                ):
                    out[(klass, name)] = None
    return list(out)


class Recorder(Generic[C]):
    """One run's module calls (see :class:`Recording`): ``calls`` in start order, and ``stack`` the
    running ones as ``(index in calls, id(module), method name)``. Only its own thread's calls count."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.calls: list[C] = []
        self.stack: list[tuple[int, int, str]] = []

    def record(
        self, fn: Callable, module: object, name: str, site: int, parent: int | None, args: tuple, kwargs: dict
    ) -> Any:
        """Run ``fn(module, *args, **kwargs)`` (the call of ``name`` on the module marked ``site``, under
        the call ``parent``), appending its call (at ``len(calls)``) first; returns what the method returns."""
        raise NotImplementedError


R = TypeVar("R", bound=Recorder)
_owner_locks: dict[str, threading.Lock] = {}


def _recorded(rec: Recorder, attr: str, name: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        site = vars(self).get(attr) if hasattr(self, "__dict__") else None
        if site is None or rec.thread != threading.get_ident():
            return fn(self, *args, **kwargs)
        if rec.stack and rec.stack[-1][1:] == (id(self), name):
            return fn(self, *args, **kwargs)  # super().__call__ of the call running: one call
        parent = rec.stack[-1][0] if rec.stack else None
        rec.stack.append((len(rec.calls), id(self), name))
        try:
            return rec.record(fn, self, name, site, parent, args, kwargs)
        finally:
            rec.stack.pop()

    return method


class Recording(Generic[R]):
    """Context manager: ``owner``'s hook on the methods (:func:`module_methods`) of ``classes``, and of
    those :meth:`add` is given while entered: a call made on ``recorder``'s thread, on a module carrying
    a site number in its attribute ``attr``, that is not a ``super()`` call of the method running on that
    module, goes to ``recorder.record``; any other runs the method alone. On exit (also on an error) all
    is unhooked. The hooks are process-wide: one recording per owner at a time."""

    def __init__(self, owner: str, attr: str, recorder: R, classes: Iterable[type] = ()) -> None:
        self.owner, self.attr, self.recorder = owner, attr, recorder
        self.classes = classes
        self.methods: list[Key] = []
        with _lock:
            self._lock = _owner_locks.setdefault(owner, threading.Lock())

    def add(self, classes: Iterable[type]) -> None:
        """Hook the methods of ``classes`` (those not hooked yet) until exit."""
        done = set(self.methods)
        for key in module_methods(classes):
            if key not in done:
                self.methods += hook([key], self.owner, functools.partial(_recorded, self.recorder, self.attr, key[1]))

    def __enter__(self) -> Recording[R]:
        self._lock.acquire()
        try:
            self.add(self.classes)
        except BaseException:
            Recording.__exit__(self, None, None, None)  # this class's: a subclass's has not entered
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            unhook(self.methods, self.owner)
        finally:
            self._lock.release()
