"""Method outputs: the methods of armed module classes wrapped, reference counted across captures."""

from __future__ import annotations

import functools
from typing import Callable

from ..graph import hook, hooked, unhook
from ._arming import CALLS, LinenIntermediates, MethodOutputs, active_captures, armed_entries, held_by_own_capture
from ._linen import call_tonnx, mutable_sows, tonnx_class

# Method outputs need the methods of the module *classes* wrapped, as flax's _add_capturing does.
# Ours differ: only plain functions are wrapped (not staticmethods, nested classes or jitted
# callables stored on the class), methods inherited from Module subclasses are wrapped too, only
# the outermost call of a method on an instance sows (super().__call__ does not sow twice), and a
# wrapper sows only on a module armed for method outputs: any other instance runs the original
# method and nothing else. The wrapping is graph.hook's (shared with the summary and find_nonfinite,
# reference counted across captures, always undone).

OWNER = "capture"


def _make_wrapper(cls: type, name: str, original: Callable) -> Callable:
    linen = name == "__call__" and cls is tonnx_class()

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
    done: list[tuple[type, str]] = []
    for cls, name in keys:
        done += hook([(cls, name)], OWNER, functools.partial(_make_wrapper, cls, name))
    return done


def unpatch(keys: list[tuple[type, str]]) -> None:
    unhook(keys, OWNER)


def patched_classes() -> dict[type, list[str]]:
    """Classes whose methods a capture has wrapped right now (empty when none is active)."""
    return hooked(OWNER)
