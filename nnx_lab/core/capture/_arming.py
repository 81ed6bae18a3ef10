"""How a capture arms a model: the marker Variables in each armed module's ``__captures__``
(the one that notes every sown type first), ``__captures__`` as flax shows it while armed, the
user's own ``nnx.capture`` inside ours, and the registry of captures armed now."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterable
from typing import Any, Protocol

from flax import nnx

ATTR = "__captures__"

#: What a capture is doing on this thread: ``recording`` is True while a method output is sown
#: (not a sow of the module's own), ``active`` the (module id, method) calls under way.
CALLS = threading.local()


# --------------------------------------------------------------------------- seeing every sown type
# The first Variable of every armed module's __captures__ is a Seen. Module.sow / perturb compare
# `type(var) == variable_type` for each entry; Seen's metaclass answers that comparison exactly
# as `is` would, and notes `variable_type` when the caller is sow or perturb. So every type sown
# on an armed module is seen, chosen or not, eagerly and while jax traces. A cached jit trace runs
# no Python and sees nothing, but it is a trace an earlier capture saw: the types each module class
# was seen sowing are remembered (_SOWN_BY_CLASS) and a capture reports those of its modules too.


class Armer(Protocol):
    """What the registry reads and counts on an armed :class:`~._capture.Capture`."""

    _seen: list[type]  # every Variable type sown on its modules, in order
    _armed_ids: set[int]  # id() of the modules it armed
    inside_own: int  # calls of the user's own nnx.capture while armed
    copied_calls: int  # method outputs recorded on a transform's copies (set by _methods)


_SOW_CODES = frozenset({nnx.Module.sow.__code__, nnx.Module.perturb.__code__})
_ACTIVE: list[Armer] = []  # the Captures armed now, innermost last
_ACTIVE_LOCK = threading.RLock()
_SOWN_BY_CLASS: weakref.WeakKeyDictionary[type, list[type]] = weakref.WeakKeyDictionary()


class _SeenMeta(type(nnx.Variable)):
    def __eq__(cls, other):
        frame = sys._getframe(1)
        if frame.f_code in _SOW_CODES and isinstance(other, type):
            _note_seen(other, frame.f_locals.get("self"))
        return cls is other

    def __ne__(cls, other):
        # Not `cls.__eq__(other)`: on the class that finds Variable.__eq__ (an instance method).
        return not _SeenMeta.__eq__(cls, other)

    __hash__ = type.__hash__


class Seen(nnx.Variable, metaclass=_SeenMeta):
    """Marker: sees the type of every sow/perturb on the module it arms; holds nothing."""


class MethodOutputs(nnx.Variable):
    """This module records its method outputs, as the Variable type in metadata ``output_type``.
    When that type is also chosen for sows, they are sown into its own entry (one tuple per name,
    as flax does); otherwise here, by name, so the module's own sows of that type are not kept."""


class LinenIntermediates(nnx.Variable):
    """Marker: this ToNNX module runs Linen with ``mutable=['intermediates']``; holds nothing."""


MARKERS = (Seen, MethodOutputs, LinenIntermediates)


def register(capture: Armer) -> None:
    """``capture`` is armed now (innermost last): sows on its modules are noted on it."""
    with _ACTIVE_LOCK:
        _ACTIVE.append(capture)


def active_captures() -> list[Armer]:
    """The Captures armed now, innermost last (a copy: safe to iterate while one disarms)."""
    with _ACTIVE_LOCK:
        return list(_ACTIVE)


def unregister(capture: Armer) -> None:
    with _ACTIVE_LOCK:
        if capture in _ACTIVE:
            _ACTIVE.remove(capture)


def _note_seen(var_type: type, module: object) -> None:
    if var_type in MARKERS or getattr(CALLS, "recording", False):
        return
    with _ACTIVE_LOCK:
        if isinstance(module, nnx.Module):
            known = _SOWN_BY_CLASS.setdefault(type(module), [])
            if var_type not in known:
                known.append(var_type)
    for cap in _owners(module):
        if var_type not in cap._seen:
            cap._seen.append(var_type)


def _owners(module: object) -> list[Armer]:
    """The captures arming ``module``; every active one when none does (inside jit/grad the module is a
    copy no capture armed itself)."""
    active = active_captures()
    return [c for c in active if id(module) in c._armed_ids] or active


# --------------------------------------------------------------------------- __captures__ as flax shows it
# While a capture is armed, the classes of its modules carry _CapturesSlot, a data descriptor for
# `__captures__` (the value itself stays in the instance dict, so graph traversal, jit and split
# see the same tuple as before). It does two things:
# - reading `module.__captures__` shows what flax's own nnx.capture would: our entries without
#   the markers (Module.sow and Module.perturb still get everything);
# - the user's own nnx.capture(...) inside an armed capture works as flax's own nesting does: an
#   inner capture replaces the outer one for its duration. When flax sets its tuple on an armed
#   module, ours is put aside; while that call runs, sow/perturb see flax's tuple only (and no
#   method output is recorded here), so the user's call gets exactly what flax gives it; when flax
#   deletes its tuple (after reading its result), ours is put back. Such calls are counted
#   (`inside_own`) so the report can say where their values went.

_FOREIGN: dict[int, tuple] = {}  # id(module) -> our entries, put aside while flax's capture runs
_SLOTS: dict[type, int] = {}  # class -> how many armed captures installed the slot on it
_SLOTS_LOCK = threading.RLock()


def _is_ours(value: object) -> bool:
    return isinstance(value, tuple) and bool(value) and type(value[0]) is Seen


class _CapturesSlot:
    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        try:
            value = vars(obj)[ATTR]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {ATTR!r}") from None
        if sys._getframe(1).f_code in _SOW_CODES:
            return value  # sow/perturb get the whole tuple: ours with its markers, or flax's own
        return tuple(v for v in value if type(v) not in MARKERS) if _is_ours(value) else value

    def __set__(self, obj, value):
        current = vars(obj).get(ATTR)
        if not _is_ours(value) and _is_ours(current) and id(obj) not in _FOREIGN:
            if not _FOREIGN:  # flax sets every module of its model in turn: one call, counted once
                _count_inside_own(obj)
            _FOREIGN[id(obj)] = current
        vars(obj)[ATTR] = value

    def __delete__(self, obj):
        try:
            vars(obj).pop(ATTR)
        except KeyError:
            raise AttributeError(ATTR) from None
        ours = _FOREIGN.pop(id(obj), None)
        if ours is None:
            return
        # Pytree.__delattr__ has unregistered the attribute: set it again as data, through __set__.
        nnx.Module.__setattr__(obj, ATTR, nnx.data(ours))


def _count_inside_own(module: object) -> None:
    """Note one call of the user's own nnx.capture on the captures arming ``module``."""
    for cap in _owners(module):
        cap.inside_own += 1


def install_slots(classes) -> list[type]:
    done = []
    with _SLOTS_LOCK:
        for cls in dict.fromkeys(classes):
            if cls in _SLOTS:
                _SLOTS[cls] += 1
            elif ATTR in vars(cls):
                continue  # the class defines __captures__ itself: left alone
            else:
                setattr(cls, ATTR, _CapturesSlot())
                _SLOTS[cls] = 1
            done.append(cls)
    return done


def remove_slots(classes) -> None:
    with _SLOTS_LOCK:
        for cls in classes:
            if cls not in _SLOTS:
                continue
            _SLOTS[cls] -= 1
            if _SLOTS[cls] <= 0:
                del _SLOTS[cls]
                if isinstance(vars(cls).get(ATTR), _CapturesSlot):
                    delattr(cls, ATTR)
        if not _SLOTS:
            _FOREIGN.clear()  # left by a flax capture that raised inside a transformation


def sown_by_classes(modules: Iterable[nnx.Module]) -> list[type]:
    """The Variable types any capture has seen instances of these modules' classes sow."""
    out: list[type] = []
    with _ACTIVE_LOCK:
        for cls in dict.fromkeys(type(m) for m in modules):
            out += [t for t in _SOWN_BY_CLASS.get(cls, ()) if t not in out]
    return out


def held_by_own_capture(module: object) -> bool:
    """Whether the user's own nnx.capture holds ``module`` now (ours is put aside)."""
    return id(module) in _FOREIGN


def forget_aside(module: object) -> None:
    """Drop our entries put aside on ``module`` (a flax capture that raised left its tuple)."""
    _FOREIGN.pop(id(module), None)


def armed_entries(module: nnx.Module) -> tuple:
    """This capture's entries on ``module`` (also while a flax capture put them aside)."""
    aside = _FOREIGN.get(id(module))
    if aside is not None:
        return aside
    entries = vars(module).get(ATTR)
    return entries if isinstance(entries, tuple) else ()


def concat(previous: Any, new: Any) -> Any:
    """Combine a value sown before with a new one: tuples append, dicts merge key by key.

    >>> concat((1,), (2,)), concat({"a": (1,)}, {"a": (2,), "b": (3,)}), concat(1, 2)
    ((1, 2), {'a': (1, 2), 'b': (3,)}, 2)
    """
    if isinstance(previous, tuple) and isinstance(new, tuple):
        return previous + new
    if isinstance(previous, dict) and isinstance(new, dict):
        return {**previous, **{k: concat(previous[k], v) if k in previous else v for k, v in new.items()}}
    return new
