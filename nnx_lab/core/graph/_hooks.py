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
import threading
from typing import Any, Callable, Iterable

Key = tuple[type, str]  # (class, method name)
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
