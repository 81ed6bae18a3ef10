"""How a capture arms a model: the marker that notes every sown type, the method-output patches
on module classes, Linen modules inside ``ToNNX``, and which modules ``only`` selects."""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import weakref
from typing import Any, Callable

from flax import nnx

_ATTR = "__captures__"
_MISSING = object()


# --------------------------------------------------------------------------- seeing every sown type
# The first Variable of every armed module's __captures__ is a _Seen. Module.sow / perturb compare
# `type(var) == variable_type` for each entry; _Seen's metaclass answers that comparison exactly
# as `is` would, and notes `variable_type` when the caller is sow or perturb. So every type sown
# on an armed module is seen, chosen or not, eagerly and while jax traces. A cached jit trace runs
# no Python and sees nothing, but it is a trace an earlier capture saw: the types each module class
# was seen sowing are remembered (_SOWN_BY_CLASS) and a capture reports those of its modules too.

_SOW_CODES = frozenset({nnx.Module.sow.__code__, nnx.Module.perturb.__code__})
_ACTIVE: list[Any] = []  # the Captures armed now, innermost last
_ACTIVE_LOCK = threading.RLock()
_SOWN_BY_CLASS: "weakref.WeakKeyDictionary[type, list[type]]" = weakref.WeakKeyDictionary()


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


class _Seen(nnx.Variable, metaclass=_SeenMeta):
    """Marker: sees the type of every sow/perturb on the module it arms; holds nothing."""


class _MethodOutputs(nnx.Variable):
    """This module records its method outputs, as the Variable type in metadata ``output_type``.
    When that type is also chosen for sows, they are sown into its own entry (one tuple per name,
    as flax does); otherwise here, by name, so the module's own sows of that type are not kept."""


class _LinenIntermediates(nnx.Variable):
    """Marker: this ToNNX module runs Linen with ``mutable=['intermediates']``; holds nothing."""


_MARKERS = (_Seen, _MethodOutputs, _LinenIntermediates)


def _note_seen(var_type: type, module: Any) -> None:
    if var_type in _MARKERS or getattr(_CALLS, "recording", False):
        return
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
        if isinstance(module, nnx.Module):
            known = _SOWN_BY_CLASS.setdefault(type(module), [])
            if var_type not in known:
                known.append(var_type)
    owners = [c for c in active if id(module) in c._armed_ids]
    # Inside jit/grad the module is a copy no capture armed itself: tell every active capture.
    for cap in owners or active:
        if var_type not in cap._seen:
            cap._seen.append(var_type)


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


def _is_ours(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and type(value[0]) is _Seen


class _CapturesSlot:
    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        try:
            value = vars(obj)[_ATTR]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {_ATTR!r}") from None
        if sys._getframe(1).f_code in _SOW_CODES:
            return value  # sow/perturb get the whole tuple: ours with its markers, or flax's own
        return tuple(v for v in value if type(v) not in _MARKERS) if _is_ours(value) else value

    def __set__(self, obj, value):
        current = vars(obj).get(_ATTR)
        if not _is_ours(value) and _is_ours(current) and id(obj) not in _FOREIGN:
            if not _FOREIGN:  # flax sets every module of its model in turn: one call, counted once
                _count_inside_own(obj)
            _FOREIGN[id(obj)] = current
        vars(obj)[_ATTR] = value

    def __delete__(self, obj):
        try:
            vars(obj).pop(_ATTR)
        except KeyError:
            raise AttributeError(_ATTR) from None
        ours = _FOREIGN.pop(id(obj), None)
        if ours is None:
            return
        # Pytree.__delattr__ has unregistered the attribute: set it again as data, through __set__.
        nnx.Module.__setattr__(obj, _ATTR, nnx.data(ours))


def _count_inside_own(module: Any) -> None:
    """Note one call of the user's own nnx.capture on the captures arming ``module`` (on all
    active ones when it is a copy made by a transformation, as for seen types)."""
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    for cap in [c for c in active if id(module) in c._armed_ids] or active:
        cap.inside_own += 1


def _install_slots(classes) -> list[type]:
    done = []
    with _PATCH_LOCK:
        for cls in dict.fromkeys(classes):
            if cls in _SLOTS:
                _SLOTS[cls] += 1
            elif _ATTR in vars(cls):
                continue  # the class defines __captures__ itself: left alone
            else:
                setattr(cls, _ATTR, _CapturesSlot())
                _SLOTS[cls] = 1
            done.append(cls)
    return done


def _remove_slots(classes) -> None:
    with _PATCH_LOCK:
        for cls in classes:
            if cls not in _SLOTS:
                continue
            _SLOTS[cls] -= 1
            if _SLOTS[cls] <= 0:
                del _SLOTS[cls]
                if isinstance(vars(cls).get(_ATTR), _CapturesSlot):
                    delattr(cls, _ATTR)
        if not _SLOTS:
            _FOREIGN.clear()  # left by a flax capture that raised inside a transformation


def sown_by_classes(modules: Any) -> list[type]:
    """The Variable types any capture has seen instances of these modules' classes sow."""
    out: list[type] = []
    with _ACTIVE_LOCK:
        for cls in dict.fromkeys(type(m) for m in modules):
            out += [t for t in _SOWN_BY_CLASS.get(cls, ()) if t not in out]
    return out


# --------------------------------------------------------------------------- patching classes
# Method outputs need the methods of the module *classes* wrapped, as flax's _add_capturing does.
# Ours differ: only plain functions are wrapped (not staticmethods, nested classes or jitted
# callables stored on the class), methods inherited from Module subclasses are wrapped too, only
# the outermost call of a method on an instance sows (super().__call__ does not sow twice), and a
# wrapper sows only on a module armed for method outputs: any other instance runs the original
# method and nothing else. Patches are reference counted across captures and always undone.

_PATCH_LOCK = threading.RLock()
_PATCHES: dict[tuple[type, str], list] = {}  # (class, name) -> [original, wrapper, count]
_CALLS = threading.local()


def _public_methods(cls: type) -> list[tuple[type, str]]:
    found = []
    for klass in cls.__mro__:
        if klass is nnx.Module or not (isinstance(klass, type) and issubclass(klass, nnx.Module)):
            continue
        for name, attr in vars(klass).items():
            if inspect.isfunction(attr) and (name == "__call__" or not name.startswith("_")):
                found.append((klass, name))
    return found


def _armed_entries(module: Any) -> tuple:
    """This capture's entries on ``module`` (also while a flax capture put them aside)."""
    aside = _FOREIGN.get(id(module))
    if aside is not None:
        return aside
    entries = vars(module).get(_ATTR)
    return entries if isinstance(entries, tuple) else ()


def _make_wrapper(cls: type, name: str, original: Callable) -> Callable:
    linen = name == "__call__" and _is_tonnx_class(cls)

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        entries = _armed_entries(self)
        # Inside the user's own nnx.capture that capture alone collects, as in flax's nesting.
        inside_own = id(self) in _FOREIGN
        marker = None if inside_own else next((v for v in entries if type(v) is _MethodOutputs), None)
        active = getattr(_CALLS, "active", None)
        if active is None:
            active = _CALLS.active = set()
        key = (id(self), name)
        outermost = key not in active
        if outermost:
            active.add(key)
        try:
            if linen and entries:
                capture_linen = (not inside_own and any(type(v) is _LinenIntermediates for v in entries)
                                 and (kwargs.get("mutable") is None or _mutable_sows(kwargs["mutable"])))
                result = _call_tonnx(self, original, args, kwargs, capture_linen)
            else:
                result = original(self, *args, **kwargs)
        finally:
            if outermost:
                active.discard(key)
        if outermost and marker is not None and result is not None:
            # Into the chosen type's own entry when that type is also collected from sow (as flax's
            # method_outputs does: a method and a sow of one name append to one tuple, in call order).
            kind = marker.get_metadata()["output_type"]
            _CALLS.recording = True  # not a sow of the module's own: the class is not noted as sowing it
            try:
                self.sow(kind if any(type(v) is kind for v in entries) else _MethodOutputs, name, result)
            finally:
                _CALLS.recording = False
        return result

    wrapper._nnx_lab_capture = True
    return wrapper


def _patch(keys: list[tuple[type, str]]) -> list[tuple[type, str]]:
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


def _unpatch(keys: list[tuple[type, str]]) -> None:
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


# --------------------------------------------------------------------------- Linen via ToNNX


def _tonnx_class() -> type | None:
    wrappers = sys.modules.get("flax.nnx.bridge.wrappers")
    return getattr(wrappers, "ToNNX", None)


def _is_tonnx_class(cls: type) -> bool:
    tonnx = _tonnx_class()
    return tonnx is not None and cls is tonnx


def _mutable_sows(mutable: Any) -> bool:
    """Whether Linen's ``sow('intermediates', ...)`` stores anything under this ``mutable``
    (``True``, ``'intermediates'``, a list naming it, a DenyList without it)."""
    try:
        from flax.core.scope import in_filter

        return bool(in_filter(mutable, "intermediates"))
    except Exception:  # noqa: BLE001 - a filter Linen itself would reject: no capture, Linen says why
        return False


def _call_tonnx(module: Any, original: Callable, args: tuple, kwargs: dict, capture_linen: bool) -> Any:
    """Call an armed ToNNX module: without its ``__captures__`` (ToNNX hands every attribute to
    Linen as a collection and would reject it), and, when ``capture_linen``, sowing what Linen sowed.

    Without ``mutable``, the call runs with ``mutable=['intermediates']``; ToNNX stores the returned
    collection as attributes (merged into the parameter dicts of Linen submodules), and afterwards
    the module's attributes are put back exactly as they were (only intermediates could have
    changed). A call given ``mutable`` keeps its updates, as without a capture; when that ``mutable``
    lets Linen sow (``mutable=True``, as flax's bridge guide does), what this call appended to the
    stored intermediates is captured, not what earlier calls stored.
    """
    saved = dict(vars(module))
    del vars(module)[_ATTR]  # plain dict edits: everything is back before anyone else looks
    kind = _linen_intermediate_type()
    if not capture_linen or kwargs.get("mutable") is not None:
        # The caller's own `mutable` collections (batch statistics) are updated as without capture.
        prior = {key: _linen_values(value, kind) for key, value in saved.items() if key != _ATTR} if capture_linen else {}
        try:
            result = original(module, *args, **kwargs)
            after = dict(vars(module))
        finally:
            vars(module)[_ATTR] = saved[_ATTR]
        for key, value in after.items():
            if not capture_linen or key == _ATTR:
                continue
            found = _appended(_linen_values(value, kind), prior.get(key, _MISSING))
            if found is not _MISSING:
                module.sow(nnx.Intermediate, key, found, reduce_fn=_concat, init_fn=tuple)
        return result
    after: dict = {}
    try:
        result = original(module, *args, **{**kwargs, "mutable": ["intermediates"]})
        after = dict(vars(module))
    finally:
        current = vars(module)
        current.clear()
        current.update(saved)
    for key, value in after.items():
        if saved.get(key, _MISSING) is value:
            continue
        found = _linen_values(value, kind)
        if found is not _MISSING:
            module.sow(nnx.Intermediate, key, found, reduce_fn=_concat, init_fn=tuple)
    return result


def _linen_intermediate_type() -> type:
    try:
        return nnx.variablelib.variable_type_from_name("intermediates")
    except ValueError:
        return nnx.Intermediate


def _linen_values(value: Any, kind: type) -> Any:
    """The values of the ``kind`` Variables in an attribute ToNNX set (nested dicts kept), or _MISSING."""
    if isinstance(value, nnx.Variable):
        return value.get_value() if type(value) is kind else _MISSING
    if isinstance(value, (dict, nnx.State)) or hasattr(value, "items"):
        out = {}
        for k, v in value.items():
            found = _linen_values(v, kind)
            if found is not _MISSING:
                out[k] = found
        return out or _MISSING
    return _MISSING


def _appended(found: Any, prior: Any) -> Any:
    """What one call added to Linen's intermediates: ``found`` without the ``prior`` values it
    started from (Linen's sow appends to the stored tuple), or _MISSING when it added nothing.

    >>> _appended({"a": (1, 2), "b": (3,)}, {"a": (1,)}), _appended((1,), (1,)) is _MISSING, _appended((5,), _MISSING)
    ({'a': (2,), 'b': (3,)}, True, (5,))
    """
    if found is _MISSING or prior is _MISSING:
        return found
    if isinstance(found, dict) and isinstance(prior, dict):
        out = {k: _appended(v, prior.get(k, _MISSING)) for k, v in found.items()}
        return {k: v for k, v in out.items() if v is not _MISSING} or _MISSING
    if isinstance(found, tuple) and isinstance(prior, tuple):
        if len(found) < len(prior):  # not appended to: the call replaced the value
            return found
        return found[len(prior):] or _MISSING
    return _MISSING if found is prior else found


def _concat(previous: Any, new: Any) -> Any:
    """Combine a value sown before with a new one: tuples append, dicts merge key by key.

    >>> _concat((1,), (2,)), _concat({"a": (1,)}, {"a": (2,), "b": (3,)}), _concat(1, 2)
    ((1, 2), {'a': (1, 2), 'b': (3,)}, 2)
    """
    if isinstance(previous, tuple) and isinstance(new, tuple):
        return previous + new
    if isinstance(previous, dict) and isinstance(new, dict):
        return {**previous, **{k: _concat(previous[k], v) if k in previous else v for k, v in new.items()}}
    return new
