"""Method outputs: the methods of armed module classes wrapped, reference counted across captures."""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Callable

from flax import nnx

from ._arming import CALLS, LinenIntermediates, MethodOutputs, active_captures, armed_entries, held_by_own_capture
from ._linen import call_tonnx, is_tonnx_class, mutable_sows

# Method outputs need the methods of the module *classes* wrapped, as flax's _add_capturing does.
# Ours differ: only plain functions are wrapped (not staticmethods, nested classes or jitted
# callables stored on the class), methods inherited from Module subclasses are wrapped too, only
# the outermost call of a method on an instance sows (super().__call__ does not sow twice), and a
# wrapper sows only on a module armed for method outputs: any other instance runs the original
# method and nothing else. Patches are reference counted across captures and always undone.

_PATCH_LOCK = threading.RLock()
_PATCHES: dict[tuple[type, str], list] = {}  # (class, name) -> [original, wrapper, count]


def _flax_own(name: str, attr: object) -> bool:
    """Whether ``attr`` is nnx.Module's own method (``sow``, ``train``...) copied onto a subclass:
    flax's ``nnx.tabulate`` leaves them there when it restores the methods it wrapped; wrapping
    ``sow`` would make a method output's own ``sow`` call recurse."""
    return any(vars(base).get(name) is attr for base in nnx.Module.__mro__)


def public_methods(cls: type) -> list[tuple[type, str]]:
    found = []
    for klass in cls.__mro__:
        if klass is nnx.Module or not (isinstance(klass, type) and issubclass(klass, nnx.Module)):
            continue
        for name, attr in vars(klass).items():
            if (
                inspect.isfunction(attr)
                and (name == "__call__" or not name.startswith("_"))
                and not _flax_own(name, attr)
            ):
                found.append((klass, name))
    return found


def _make_wrapper(cls: type, name: str, original: Callable) -> Callable:
    linen = name == "__call__" and is_tonnx_class(cls)

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        entries = armed_entries(self)
        # Inside the user's own nnx.capture that capture alone collects, as in flax's nesting.
        in_own = held_by_own_capture(self)
        marker = None if in_own else next((v for v in entries if type(v) is MethodOutputs), None)
        active = getattr(CALLS, "active", None)
        if active is None:
            active = CALLS.active = set()
        key = (id(self), name)
        outermost = key not in active
        if outermost:
            active.add(key)
        try:
            if linen and entries:
                capture_linen = (
                    not in_own
                    and any(type(v) is LinenIntermediates for v in entries)
                    and (kwargs.get("mutable") is None or mutable_sows(kwargs["mutable"]))
                )
                result = call_tonnx(self, original, args, kwargs, capture_linen)
            else:
                result = original(self, *args, **kwargs)
        finally:
            if outermost:
                active.discard(key)
        if outermost and marker is not None and result is not None:
            # Into the chosen type's own entry when that type is also collected from sow (as flax's
            # method_outputs does: a method and a sow of one name append to one tuple, in call order).
            kind = marker.get_metadata()["output_type"]
            CALLS.recording = True  # not a sow of the module's own: the class is not noted as sowing it
            try:
                self.sow(kind if any(type(v) is kind for v in entries) else MethodOutputs, name, result)
            finally:
                CALLS.recording = False
            _note_copy(self)
        return result

    wrapper._nnx_lab_capture = True
    return wrapper


def _note_copy(module) -> None:
    """A method output recorded on a module no capture armed: a copy made by a transform (a Module
    passed to ``jax.jit`` as a pytree is rebuilt inside the trace; nnx.jit's copies send their
    values back, jax.jit's do not). Counted, so a capture that ends with nothing can say why."""
    active = active_captures()
    if active and not any(id(module) in cap._armed_ids for cap in active):
        for cap in active:
            cap.copied_calls = getattr(cap, "copied_calls", 0) + 1


def patch(keys: list[tuple[type, str]]) -> list[tuple[type, str]]:
    done = []
    with _PATCH_LOCK:
        for cls, name in keys:
            entry = _PATCHES.get((cls, name))
            if entry is None:
                original = vars(cls)[name]
                wrapper = _make_wrapper(cls, name, original)
                setattr(cls, name, wrapper)
                _PATCHES[(cls, name)] = [original, wrapper, 1]
            else:
                entry[2] += 1
            done.append((cls, name))
    return done


def unpatch(keys: list[tuple[type, str]]) -> None:
    with _PATCH_LOCK:
        for cls, name in keys:
            entry = _PATCHES.get((cls, name))
            if entry is None:
                continue
            entry[2] -= 1
            if entry[2] <= 0:
                del _PATCHES[(cls, name)]
                if vars(cls).get(name) is entry[1]:  # not redefined meanwhile by someone else
                    setattr(cls, name, entry[0])


def patched_classes() -> dict[type, list[str]]:
    """Classes whose methods a capture has wrapped right now (empty when none is active)."""
    out: dict[type, list[str]] = {}
    with _PATCH_LOCK:
        for cls, name in _PATCHES:
            out.setdefault(cls, []).append(name)
    return out
