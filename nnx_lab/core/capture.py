"""Capture what modules ``sow`` and ``perturb``, and their method outputs, without editing the model.

flax's own mechanism (``nnx.capture``) arms every submodule with a ``__captures__`` tuple of
Variables that ``Module.sow`` / ``Module.perturb`` write into, and, for method outputs, wraps
the methods of the module *classes*. :class:`Capture` uses the same ``__captures__``
mechanism as a context manager, with what a notebook needs on top:

- it always disarms (no ``__captures__`` left, no class left patched), also when the body
  raises or is interrupted, so the model's graph and state are exactly what they were;
- modules outside ``only`` are armed with nothing to capture, so their ``sow`` neither
  captures nor creates attributes on them; other instances of a patched class (not armed)
  run the original method and sow nothing;
- it notes every Variable type that was sown, chosen or not (``seen_types``);
- a ``nnx.bridge.ToNNX`` module's Linen ``sow('intermediates', ...)`` values are captured too.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> class Block(nnx.Module):
...     def __init__(self, rngs):
...         self.linear = nnx.Linear(2, 3, rngs=rngs)
...     def __call__(self, x):
...         h = self.linear(x)
...         self.sow(nnx.Intermediate, "h", h)
...         return nnx.relu(h)
>>> model = Block(nnx.Rngs(0))
>>> with Capture(model) as cap:
...     y = model(jnp.ones((1, 2)))
...     y = model(jnp.ones((1, 2)))
>>> [(path, len(v.get_value())) for path, v in nnx.to_flat_state(cap.captured)]
[(('h',), 2)]
>>> hasattr(model, "__captures__")
False
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import html
import inspect
import math
import signal
import sys
import threading
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from flax.nnx import filterlib
from flax.nnx import graph as nnx_graph

from . import render
from .histogram import DEFAULT_BINS, histograms_dispatch, histograms_fetch, sparkline
from .snapshot import Snapshot, snapshot
from .tree import Path, path_text

#: What a capture collects unless told otherwise.
DEFAULT_TYPES: tuple[type[nnx.Variable], ...] = (nnx.Intermediate,)

_ATTR = "__captures__"
_MISSING = object()


# --------------------------------------------------------------------------- Variable types


def resolve_types(spec: Any, namespace: dict | None = None) -> tuple[type[nnx.Variable], ...]:
    """The Variable types named by ``spec``, in order, without repeats.

    ``spec``: a Variable subclass; a name (``"Intermediate"``, ``"nnx.Perturbation"``, a Linen
    collection name such as ``"intermediates"``, or a name bound in ``namespace`` such as your
    own ``"MyInterm"``); a comma-separated string of those; or a sequence of any of them.
    ``None`` means :data:`DEFAULT_TYPES`. Raises a one-line ``ValueError`` for an unknown name
    and ``TypeError`` for anything that is not a Variable type.

    >>> resolve_types("Intermediate, nnx.Perturbation")
    (<class 'flax.nnx.variablelib.Intermediate'>, <class 'flax.nnx.variablelib.Perturbation'>)
    >>> resolve_types("Linear")
    Traceback (most recent call last):
    TypeError: 'Linear' is a type, not an nnx.Variable type
    """
    if spec is None:
        return DEFAULT_TYPES
    found: list[type[nnx.Variable]] = []
    for item in _items(spec):
        t = _resolve_one(item, namespace or {})
        if t not in found:
            found.append(t)
    if not found:
        raise ValueError("no Variable type given")
    return tuple(found)


def _items(spec: Any) -> list:
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")]
        if any(not p for p in parts):
            raise ValueError(f"empty name in the type list {spec!r}")
        return parts
    if isinstance(spec, type):
        return [spec]
    if isinstance(spec, (list, tuple, set, frozenset)):
        return [x for item in spec for x in _items(item)]
    raise TypeError(f"{spec!r} is {a_kind(type(spec).__name__)}, not an nnx.Variable type")


def _resolve_one(item: Any, namespace: dict) -> type[nnx.Variable]:
    if isinstance(item, type):
        if issubclass(item, nnx.Variable):
            return item
        raise TypeError(f"{item.__name__} is not an nnx.Variable type")
    name = item
    obj: Any = _MISSING
    for prefix in ("flax.nnx.", "nnx."):
        if name.startswith(prefix) and isinstance(getattr(nnx, name[len(prefix):], None), type):
            obj = getattr(nnx, name[len(prefix):])
    if obj is _MISSING and name.isidentifier() and isinstance(getattr(nnx, name, None), type):
        obj = getattr(nnx, name)
    if obj is _MISSING:
        head, *rest = name.split(".")
        if head in namespace:
            obj = namespace[head]
            for attr in rest:
                obj = getattr(obj, attr, _MISSING)
                if obj is _MISSING:
                    break
    if obj is _MISSING:
        try:  # a Linen collection name: "intermediates", "perturbations", ...
            obj = nnx.variablelib.variable_type_from_name(name)
        except ValueError:
            pass
    if obj is _MISSING:
        raise ValueError(f"unknown Variable type {name!r}: not in flax.nnx, not a registered collection "
                         "name, not defined in this namespace")
    if isinstance(obj, type) and issubclass(obj, nnx.Variable):
        return obj
    kind = "type" if isinstance(obj, type) else type(obj).__name__
    raise TypeError(f"{name!r} is {a_kind(kind)}, not an nnx.Variable type")


def a_kind(name: str) -> str:
    """``name`` with its article: ``a_kind("int")`` is ``'an int'``."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def type_names(types: Sequence[type]) -> list[str]:
    return [t.__name__ for t in types]


# --------------------------------------------------------------------------- seeing every sown type
# The first Variable of every armed module's __captures__ is a _Seen. Module.sow / perturb compare
# `type(var) == variable_type` for each entry; _Seen's metaclass answers that comparison exactly
# as `is` would, and notes `variable_type` when the caller is sow or perturb. So every type sown
# on an armed module is seen, chosen or not, eagerly and while jax traces (a cached jit trace runs
# no Python: it sees nothing new, but it can only be a trace an earlier capture already saw).

_SOW_CODES = frozenset({nnx.Module.sow.__code__, nnx.Module.perturb.__code__})
_ACTIVE: list["Capture"] = []
_ACTIVE_LOCK = threading.RLock()


class _SeenMeta(type(nnx.Variable)):
    def __eq__(cls, other):
        frame = sys._getframe(1)
        if frame.f_code in _SOW_CODES and isinstance(other, type):
            _note_seen(other, frame.f_locals.get("self"))
        return cls is other

    def __ne__(cls, other):
        return not cls.__eq__(other)

    __hash__ = type.__hash__


class _Seen(nnx.Variable, metaclass=_SeenMeta):
    """Marker: sees the type of every sow/perturb on the module it arms; holds nothing."""


class _MethodOutputs(nnx.Variable):
    """Marker: this module records method outputs (metadata ``output_type``); holds nothing."""


class _LinenIntermediates(nnx.Variable):
    """Marker: this ToNNX module runs Linen with ``mutable=['intermediates']``; holds nothing."""


_MARKERS = (_Seen, _MethodOutputs, _LinenIntermediates)


def _note_seen(var_type: type, module: Any) -> None:
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    owners = [c for c in active if id(module) in c._armed_ids]
    # Inside jit/grad the module is a copy no capture armed itself: tell every active capture.
    for cap in owners or active:
        if var_type not in cap._seen:
            cap._seen.append(var_type)


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
    entries = vars(module).get(_ATTR)
    return entries if isinstance(entries, tuple) else ()


def _make_wrapper(cls: type, name: str, original: Callable) -> Callable:
    linen = name == "__call__" and _is_tonnx_class(cls)

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        entries = _armed_entries(self)
        output_type = next((v.get_metadata().get("output_type") for v in entries
                            if type(v) is _MethodOutputs), None)
        active = getattr(_CALLS, "active", None)
        if active is None:
            active = _CALLS.active = set()
        key = (id(self), name)
        outermost = key not in active
        if outermost:
            active.add(key)
        try:
            if linen and entries:
                capture_linen = any(type(v) is _LinenIntermediates for v in entries) and kwargs.get("mutable") is None
                result = _call_tonnx(self, original, args, kwargs, capture_linen)
            else:
                result = original(self, *args, **kwargs)
        finally:
            if outermost:
                active.discard(key)
        if outermost and output_type is not None and result is not None:
            self.sow(output_type, name, result)
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


def _call_tonnx(module: Any, original: Callable, args: tuple, kwargs: dict, capture_linen: bool) -> Any:
    """Call an armed ToNNX module: without its ``__captures__`` (ToNNX hands every attribute to
    Linen as a collection and would reject it), and, when ``capture_linen``, with
    ``mutable=['intermediates']``, sowing what Linen sowed.

    ToNNX stores the returned collection as attributes (merged into the parameter dicts of Linen
    submodules); the module's attributes are put back exactly as they were afterwards.
    """
    saved = dict(vars(module))
    del vars(module)[_ATTR]  # plain dict edits: everything is back before anyone else looks
    after: dict = {}
    try:
        if not capture_linen:
            return original(module, *args, **kwargs)
        result = original(module, *args, **{**kwargs, "mutable": ["intermediates"]})
        after = dict(vars(module))
    finally:
        current = vars(module)
        current.clear()
        current.update(saved)
    kind = _linen_intermediate_type()
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


# --------------------------------------------------------------------------- selecting modules


def module_paths_text(path: Path) -> set[str]:
    """The ways a user may write a module path: ``blocks[0].attn``, ``blocks/0/attn``, ``blocks.0.attn``."""
    return {path_text(path), "/".join(map(str, path)), ".".join(map(str, path))}


def _selector(only: Any) -> Callable[[Path, Any, dict], bool]:
    """A predicate on (path, module, {path: selected-as-root}) for ``only``; TypeError if invalid."""
    if only is ... or only is None or only is True:
        return lambda path, module: True
    if isinstance(only, str) or (isinstance(only, tuple) and only and all(isinstance(k, (str, int)) for k in only)):
        return _PathSelector(only)
    try:
        predicate = filterlib.to_predicate(only)
    except (TypeError, ValueError):
        raise TypeError(f"only={only!r} is not an NNX filter or a module path") from None
    return lambda path, module: bool(predicate(path, module))


class _PathSelector:
    """A module path (text or key tuple): that module and everything under it."""

    def __init__(self, only: str | tuple):
        self.only = only
        self.text = only.strip() if isinstance(only, str) else None

    def root_of(self, path: Path) -> bool:
        if self.text is None:
            return tuple(path) == tuple(self.only)
        return self.text in module_paths_text(path) or (not path and self.text in ("", "."))


def _select(modules: list[tuple[Path, Any]], selector) -> list[bool]:
    if isinstance(selector, _PathSelector):
        roots = [path for path, _ in modules if selector.root_of(path)]
        return [any(path[: len(r)] == r for r in roots) for path, _ in modules]
    return [selector(path, module) for path, module in modules]


# --------------------------------------------------------------------------- Capture


def _check_model(model: Any) -> None:
    if not isinstance(model, nnx.Module):
        raise TypeError(f"expected an nnx.Module to capture from, got {type(model).__name__}")


def _method_type(methods: Any) -> type[nnx.Variable] | None:
    if methods is False or methods is None:
        return None
    if methods is True:
        return nnx.Intermediate
    if isinstance(methods, type) and issubclass(methods, nnx.Variable):
        return methods
    raise TypeError(f"methods={methods!r}: expected True/False or an nnx.Variable type")


class Capture:
    """Collect what ``model``'s submodules sow (and, with ``methods``, every method's output).

    ``types``: the Variable types to keep (see :func:`resolve_types`), default ``Intermediate``.
    ``methods``: record each public method's and ``__call__``'s output under its name (``True``
    means as ``nnx.Intermediate``, or give a Variable type). ``only``: an NNX filter on
    ``(path, module)`` (``nnx.Linear``, ``nnx.PathContains('attn')``, a function), or a module path
    (``"blocks[0]"``, ``"blocks/0"``, a key tuple) meaning that module and all under it.
    ``init``: a State of starting values (the perturbations of the gradient recipe).

    While entered, every submodule of ``model`` carries flax's ``__captures__``; on exit (always,
    also on an exception or KeyboardInterrupt) they are removed and every patched class method is
    restored; then ``captured`` (an ``nnx.State`` keyed by module path, then sow name),
    ``seen_types`` (every type sown or perturbed, chosen or not) and ``matched`` (module paths
    ``only`` selected) are filled in. A Capture can be entered once.
    """

    def __init__(self, model: nnx.Module, *, types: Any = DEFAULT_TYPES, methods: bool | type = False,
                 only: Any = ..., init: nnx.State | None = None):
        _check_model(model)
        self.model = model
        self.types = resolve_types(types)
        self.method_type = _method_type(methods)
        if self.method_type is not None and self.method_type not in self.types:
            self.types = (*self.types, self.method_type)
        self.only = only
        self._selector = _selector(only)
        if init is not None and not isinstance(init, (nnx.State, dict)):
            raise TypeError(f"init must be an nnx.State, got {type(init).__name__}")
        self.init = init
        self._init_by_module = _group_by_module(init)
        self.captured: nnx.State | None = None
        self.seen_types: tuple[type, ...] = ()
        self.matched: tuple[Path, ...] = ()
        self._seen: list[type] = []
        self._armed: list[tuple[Path, Any, bool, Any]] = []  # path, module, selected, stashed __captures__
        self._armed_ids: set[int] = set()
        self._patched: list[tuple[type, str]] = []
        self._state = "new"

    # -- arming

    def __enter__(self) -> "Capture":
        if self._state != "new":
            raise RuntimeError("a Capture can be entered only once; make a new one")
        self._state = "armed"
        with _sigint_deferred():
            try:
                self._arm()
            except BaseException:
                self._disarm()
                raise
        return self

    def _arm(self) -> None:
        modules = list(nnx.iter_modules(self.model))
        selected = _select(modules, self._selector)
        self.matched = tuple(path for (path, _), s in zip(modules, selected) if s)
        init_by_module = self._init_by_module
        tonnx = _tonnx_class()
        to_patch: list[tuple[type, str]] = []
        with _ACTIVE_LOCK:
            _ACTIVE.append(self)
        for (path, module), sel in zip(modules, selected):
            if not _armable(module):
                continue
            values: dict[type, dict] = {t: {} for t in self.types} if sel else {}
            for init in init_by_module.get(tuple(path), ()):
                values.setdefault(init.type, {})[init.key] = init.value
            entries: list[nnx.Variable] = [_Seen({}), *(t(v) for t, v in values.items())]
            if sel and self.method_type is not None:
                entries.append(_MethodOutputs({}, output_type=self.method_type))
                to_patch += _public_methods(type(module))
            if tonnx is not None and isinstance(module, tonnx):
                # Patched even when not selected: ToNNX must not see the __captures__ attribute.
                to_patch.append((tonnx, "__call__"))
                if sel and nnx.Intermediate in self.types:
                    entries.append(_LinenIntermediates({}))
            stash = vars(module).get(_ATTR, _MISSING)
            self._armed.append((tuple(path), module, sel, stash))
            self._armed_ids.add(id(module))
            setattr(module, _ATTR, nnx.data(tuple(entries)))
        self._patched = _patch(list(dict.fromkeys(to_patch)))

    # -- disarming

    def __exit__(self, *exc) -> bool:
        with _sigint_deferred():
            self._disarm()
        return False

    def _disarm(self) -> None:
        if self._state == "done":
            return
        self._state = "done"
        try:
            _unpatch(self._patched)
        finally:
            self._patched = []
            flat: list[tuple[Path, nnx.Variable]] = []
            try:
                for path, module, sel, stash in self._armed:
                    entries = _armed_entries(module)
                    if sel:
                        flat += self._collect(path, entries)
            finally:
                for path, module, sel, stash in self._armed:
                    if _ATTR in vars(module):
                        delattr(module, _ATTR)
                    if stash is not _MISSING:
                        setattr(module, _ATTR, nnx.data(stash))
                with _ACTIVE_LOCK:
                    if self in _ACTIVE:
                        _ACTIVE.remove(self)
            self.captured = nnx.from_flat_state(flat) if flat else nnx.State({})
            seen = list(self._seen)
            for _, var in flat:
                if type(var) not in seen:
                    seen.append(type(var))
            self.seen_types = tuple(seen)

    def _collect(self, path: Path, entries: tuple) -> list[tuple[Path, nnx.Variable]]:
        out = []
        for var in entries:
            if type(var) in _MARKERS or type(var) not in self.types:
                continue
            for key, value in dict(var.get_value()).items():
                out.append(((*path, key), type(var)(value)))
        return out

    # -- feeding values in from outside (gradient runs on a copy of the model)

    def absorb(self, state: nnx.State, seen_types: Sequence[type] = ()) -> None:
        """Add the values of a State captured elsewhere (on a copy of this model) as if sown here.

        Tuples are appended to what this capture holds (call order is kept); any other value
        replaces it. Only modules this capture selected take values, only of its types.
        ``seen_types`` (types sown over there) join :attr:`seen_types`.
        """
        if self._state != "armed":
            raise RuntimeError("absorb() only while the Capture is entered")
        self._seen.extend(t for t in seen_types if t not in self._seen)
        modules = {path: module for path, module, sel, _ in self._armed if sel}
        for path, var in nnx.to_flat_state(state):
            module = modules.get(tuple(path[:-1]))
            if module is None or type(var) not in self.types:
                continue
            for entry in _armed_entries(module):
                if type(entry) is type(var):
                    key = path[-1]
                    entry[key] = _concat(entry[key], var.get_value()) if key in entry else var.get_value()
                    if type(var) not in self._seen:
                        self._seen.append(type(var))

    def report(self, *, grads: nnx.State | None = None, bins: int = DEFAULT_BINS) -> "CaptureReport":
        """The :class:`CaptureReport` of what this capture collected (after exit)."""
        if self.captured is None:
            raise RuntimeError("nothing captured yet: use the Capture in a `with` block first")
        return capture_report(self.captured, grads=grads, types=self.types, seen_types=self.seen_types,
                              matched=None if _selects_all(self.only) else self.matched, bins=bins)


def _armable(module: Any) -> bool:
    """False for a module whose children are keyed by integers (``nnx.List``): a string key beside
    them would make its state unsortable for jax's tree functions. Such containers do not sow."""
    try:
        keys = nnx_graph.get_node_impl(module).node_dict(module)
    except Exception:
        return True
    return not any(isinstance(k, int) for k in keys)


def _selects_all(only: Any) -> bool:
    return only is ... or only is None or only is True


class _InitVar(NamedTuple):
    key: Any
    value: Any
    type: type


def _group_by_module(init: Any) -> dict[Path, list[_InitVar]]:
    if init is None:
        return {}
    out: dict[Path, list[_InitVar]] = {}
    for path, var in nnx.to_flat_state(init if isinstance(init, nnx.State) else nnx.State(init)):
        if not isinstance(var, nnx.Variable):
            raise TypeError(f"init: {path_text(path)} is {a_kind(type(var).__name__)}, not a Variable")
        out.setdefault(tuple(path[:-1]), []).append(_InitVar(path[-1], var.get_value(), type(var)))
    return out


@contextlib.contextmanager
def _sigint_deferred():
    """Hold a Ctrl-C arriving while modules are (dis)armed until that is finished, then raise it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    except (ValueError, TypeError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
        if received:
            raise KeyboardInterrupt


# --------------------------------------------------------------------------- one-call helpers


def capture_call(model: nnx.Module, fn: Callable, *args: Any, types: Any = DEFAULT_TYPES,
                 methods: bool | type = False, only: Any = ..., **kwargs: Any) -> tuple[Any, nnx.State]:
    """``fn(*args, **kwargs)`` with ``model`` captured: ``(result, captured State)``.

    ``fn`` may be the model itself, one of its methods, or any function that calls it (an
    ``nnx.jit`` function of the model included).

    >>> import jax.numpy as jnp
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> y, captured = capture_call(model, model, jnp.ones((1, 2)), methods=True)
    >>> sorted(path_text(p) for p, _ in nnx.to_flat_state(captured))
    ['__call__', 'layers[0].__call__']
    """
    with Capture(model, types=types, methods=methods, only=only) as cap:
        if inspect.ismethod(fn) and isinstance(fn.__self__, nnx.Module):
            fn = getattr(fn.__self__, fn.__name__)  # bound before the class was patched: bind again
        result = fn(*args, **kwargs)
    return result, cap.captured


@dataclasses.dataclass(frozen=True)
class GradResult:
    """What :func:`intermediate_grads` returns: the loss, the forward captures, the gradients
    (unpacks as those three), and every Variable type sown or perturbed during the loss."""

    loss: Any
    forward: nnx.State
    grads: nnx.State
    seen_types: tuple[type, ...] = ()

    def __iter__(self):
        return iter((self.loss, self.forward, self.grads))


class NoPerturbations(ValueError):
    """The loss function ran no ``Module.perturb`` under the perturbation types."""


def _split_types(types: tuple[type, ...]) -> tuple[tuple[type, ...], tuple[type, ...]]:
    perturb = tuple(t for t in types if issubclass(t, nnx.Perturbation))
    forward = tuple(t for t in types if not issubclass(t, nnx.Perturbation))
    return forward or DEFAULT_TYPES, perturb or (nnx.Perturbation,)


def intermediate_grads(model: nnx.Module, loss_fn: Callable, *args: Any, types: Any = DEFAULT_TYPES,
                       methods: bool | type = False, only: Any = ..., **kwargs: Any) -> GradResult:
    """The gradient of ``loss_fn(model, *args, **kwargs)`` (a scalar) at every ``perturb`` point.

    flax's four-step recipe (``Module.perturb``): (1) find the perturbation points and their
    shapes (here with ``jax.eval_shape``: nothing runs on the device) and make zeros; (2) call the
    loss with ``init=`` those zeros captured; (3) ``jax.value_and_grad`` with respect to them;
    (4) return the forward captures and the gradients side by side. ``types`` may name
    Perturbation subclasses (what ``perturb`` was given) and forward types (default
    ``Intermediate``). Everything runs on a copy of the model: its Variables, RNG counts and
    batch statistics are exactly as before. Raises :class:`NoPerturbations` when nothing was
    perturbed, ``TypeError`` when the loss is not a scalar. The gradient runs eagerly, op by op;
    give an ``nnx.jit`` loss function to run its forward and backward passes compiled.

    >>> import jax.numpy as jnp
    >>> class Scale(nnx.Module):
    ...     def __call__(self, x):
    ...         x = self.perturb("x", x)
    ...         self.sow(nnx.Intermediate, "y", 3 * x)
    ...         return 3 * x
    >>> loss, forward, grads = intermediate_grads(Scale(), lambda m, x: m(x).sum(), jnp.ones(2))
    >>> float(loss), grads["x"].get_value().tolist(), forward["y"].get_value()[0].tolist()
    (6.0, [3.0, 3.0], [3.0, 3.0])
    """
    _check_model(model)
    forward_types, perturb_types = _split_types(resolve_types(types))
    graphdef, state = nnx.split(model)
    state = jax.tree.map(lambda x: x, state)  # fresh Variables: the copy cannot write into the model

    def run(perturbations, kinds, with_methods):
        copy = nnx.merge(graphdef, jax.tree.map(lambda x: x, state))
        with Capture(copy, types=kinds, methods=with_methods, only=only, init=perturbations) as cap:
            loss = loss_fn(copy, *args, **kwargs)
        return loss, cap.captured, cap.seen_types

    shape_loss, shapes, seen = _eval_shape_with_types(lambda: run(None, perturb_types, False))
    if getattr(shape_loss, "shape", None) != ():
        what = f"shape {tuple(shape_loss.shape)}" if hasattr(shape_loss, "shape") else type(shape_loss).__name__
        raise TypeError(f"the loss function must return a scalar; it returned {what}")
    if not list(nnx.to_flat_state(shapes)):
        others = ", ".join(t.__name__ for t in seen) or "nothing"
        raise NoPerturbations(f"no module called perturb() under {', '.join(type_names(perturb_types))} "
                              f"(sown during the loss: {others})")
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    seen = list(seen)

    def loss_and_forward(perturbations):
        loss, forward, more = run(perturbations, forward_types, methods)
        seen.extend(t for t in more if t not in seen)
        return loss, forward

    (loss, forward), grads = jax.value_and_grad(loss_and_forward, has_aux=True)(zeros)
    return GradResult(loss, forward, grads, tuple(seen))


def _eval_shape_with_types(fn: Callable) -> tuple:
    """jax.eval_shape of ``fn() -> (loss, State, seen types)``; the types pass through untraced."""
    box: list = []

    def traced():
        loss, captured, seen = fn()
        box.append(seen)
        return loss, captured

    loss, captured = jax.eval_shape(traced)
    return loss, captured, box[0] if box else ()


# --------------------------------------------------------------------------- rows and histograms


def flatten_captured(captured: nnx.State) -> nnx.State:
    """One Variable per array: a sown tuple becomes entries ``0, 1, ...`` under its name.

    >>> s = nnx.State({"block": {"h": nnx.Intermediate((jnp.ones(2), jnp.zeros(3)))}})
    >>> [path_text(p) for p, _ in nnx.to_flat_state(flatten_captured(s))]
    ['block.h[0]', 'block.h[1]']
    """
    flat: list[tuple[Path, Any]] = []
    for path, var in nnx.to_flat_state(captured):
        if not isinstance(var, nnx.Variable):
            flat.append((tuple(path), var))
            continue
        leaves, _ = jax.tree_util.tree_flatten_with_path(var.get_value(), is_leaf=lambda x: x is None)
        for keys, leaf in leaves:
            flat.append(((*path, *(_key(k) for k in keys)), type(var)(leaf)))
    return nnx.from_flat_state(flat) if flat else nnx.State({})


def _key(k: Any) -> Any:
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return str(k)


@dataclasses.dataclass(frozen=True)
class Table:
    """A snapshot of flattened captured values with a histogram per row (row order)."""

    state: nnx.State
    snapshot: Snapshot
    hist: tuple


def _table(captured: nnx.State, bins: int) -> Table:
    flat_state = flatten_captured(captured)
    by_path = {tuple(p): (v.get_value() if isinstance(v, nnx.Variable) else v)
               for p, v in nnx.to_flat_state(flat_state)}
    paths = list(by_path)
    live = [by_path[p] if isinstance(by_path[p], (jax.Array, np.ndarray)) and not isinstance(by_path[p], jax.core.Tracer)
            else None for p in paths]
    # Histogram kernels are queued first; the snapshot's statistics queue behind them and its one
    # device_get waits for both, so fetching the histograms afterwards does not wait again.
    pending = histograms_dispatch(live, bins)
    snap = snapshot(flat_state)
    hists = dict(zip(paths, histograms_fetch(pending)))
    return Table(flat_state, snap, tuple(hists.get(r.path) if r.status == "ok" else None for r in snap.rows))


# --------------------------------------------------------------------------- the report


@dataclasses.dataclass(frozen=True)
class CaptureReport:
    """What a capture collected, described: snapshot rows (one per sown array) with statistics and
    a histogram, the gradients likewise when there are any, and messages for the user."""

    captured: nnx.State
    grads: nnx.State | None
    types: tuple[type, ...]
    seen_types: tuple[type, ...]
    matched: tuple[Path, ...] | None
    messages: tuple[str, ...]
    snapshot: Snapshot
    hist: tuple
    grads_snapshot: Snapshot | None
    grads_hist: tuple | None
    bins: int

    @property
    def empty(self) -> bool:
        return len(self.snapshot.rows) == 0

    def to_dict(self) -> dict:
        """JSON payload for the capture panel (see the module docstring of nnx_lab.core.capture)."""
        hist = {"bins": self.bins, "rows": list(self.hist)}
        grads = None
        if self.grads_snapshot is not None:
            grads = {"snapshot": self.grads_snapshot.to_dict(),
                     "hist": {"bins": self.bins, "rows": list(self.grads_hist or ())}}
        return {"snapshot": self.snapshot.to_dict(), "hist": hist, "grads": grads,
                "messages": list(self.messages), "types": type_names(self.types),
                "seen": type_names(self.seen_types)}

    def to_text(self, max_rows: int | None = 50) -> str:
        lines = [f"captured {_count(len(self.snapshot.rows), 'array')} ({', '.join(type_names(self.types))})"]
        lines += [f"!! {m}" for m in self.messages]
        if self.snapshot.rows:
            lines.append(_text_rows(self.snapshot, self.hist, max_rows))
        if self.grads_snapshot is not None and self.grads_snapshot.rows:
            lines.append(f"gradients at {_count(len(self.grads_snapshot.rows), 'perturbation')}")
            lines.append(_text_rows(self.grads_snapshot, self.grads_hist or (), max_rows))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text()

    def to_html(self, max_rows: int = 200) -> str:
        esc = html.escape
        parts = ['<div class="nnx-lab-capture">',
                 f"<div><b>{esc(self.to_text().splitlines()[0])}</b></div>"]
        for m in self.messages:
            parts.append(f'<div class="nnx-lab-warn" style="color:#b45309">{esc(m)}</div>')
        if self.snapshot.rows:
            parts.append(_html_rows(self.snapshot, self.hist, max_rows))
        if self.grads_snapshot is not None and self.grads_snapshot.rows:
            heading = f"gradients at {_count(len(self.grads_snapshot.rows), 'perturbation')}"
            parts.append(f"<div><b>{esc(heading)}</b></div>")
            parts.append(_html_rows(self.grads_snapshot, self.grads_hist or (), max_rows))
        parts.append("</div>")
        return "".join(parts)

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": self.to_text(), "text/html": self.to_html()}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


_COLUMNS = ("path", "type", "shape", "dtype", "mean", "std", "min", "max", "histogram")


def _cells(row, hist) -> list[str]:
    stats = row.stats or {}
    note = "" if row.status == "ok" else f"  ({row.status})"
    values = [row.path_text + note, row.type, render.format_shape(row.shape), row.dtype or ""]
    values += [render.format_number(stats.get(k)) for k in ("mean", "std", "min", "max")]
    nonfinite = render.nonfinite_text(row)
    values.append(sparkline(hist) + (f"  {nonfinite}" if nonfinite else ""))
    return values


def _text_rows(snap: Snapshot, hists: Sequence, max_rows: int | None) -> str:
    shown = snap.rows if max_rows is None else snap.rows[:max_rows]
    cells = [list(_COLUMNS)] + [_cells(r, h) for r, h in zip(shown, hists)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    if len(shown) < len(snap.rows):
        lines.append(f"… {len(snap.rows) - len(shown)} more rows")
    return "\n".join(lines)


_LEFT = ' style="text-align:left"'
_RIGHT = ' style="text-align:right"'


def _html_rows(snap: Snapshot, hists: Sequence, max_rows: int) -> str:
    esc = html.escape
    numeric = {"mean", "std", "min", "max"}
    align = [_RIGHT if c in numeric else _LEFT for c in _COLUMNS]
    parts = ['<div style="max-height:420px;overflow:auto">'
             '<table style="border-collapse:separate;border-spacing:10px 1px;font-size:12px;white-space:nowrap"><tr>'
             + "".join(f"<th{a}>{esc(c)}</th>" for a, c in zip(align, _COLUMNS)) + "</tr>"]
    for row, hist in zip(snap.rows[:max_rows], hists):
        cells = _cells(row, hist)
        title = f' title="{esc(f"{hist[0]:.4g} … {hist[1]:.4g}")}"' if hist else ""
        parts.append("<tr>" + "".join(f"<td{a}>{esc(c)}</td>" for a, c in zip(align[:-1], cells[:-1]))
                     + f'<td{_LEFT}{title} style="font-family:monospace">{esc(cells[-1])}</td></tr>')
    parts.append("</table></div>")
    if len(snap.rows) > max_rows:
        parts.append(f"<div>… {len(snap.rows) - max_rows} more rows</div>")
    return "".join(parts)


def capture_report(captured: nnx.State, *, grads: nnx.State | None = None, types: Any = DEFAULT_TYPES,
                   seen_types: Sequence[type] = (), matched: Sequence[Path] | None = None,
                   bins: int = DEFAULT_BINS, only_text: str | None = None) -> CaptureReport:
    """Describe captured values (and gradients): statistics and a histogram per array, computed on
    the device; only the numbers come to the host. ``matched``: the module paths an ``only``
    filter selected (None when there was no filter; ``only_text`` names that filter in the
    messages). The messages say what went wrong or
    was left out: a filter that matched nothing, nothing sown under the chosen types (naming
    the types that were), types sown but not chosen, no gradients.
    """
    types = resolve_types(types)
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    table = _table(captured, bins)
    grads_table = _table(grads, bins) if grads is not None else None
    messages = _messages(table, grads_table, types, tuple(seen_types), matched, only_text or "the `only` filter")
    return CaptureReport(
        captured=captured, grads=grads, types=types, seen_types=tuple(seen_types),
        matched=None if matched is None else tuple(matched), messages=tuple(messages),
        snapshot=table.snapshot, hist=table.hist,
        grads_snapshot=grads_table.snapshot if grads_table else None,
        grads_hist=grads_table.hist if grads_table else None, bins=bins)


def _messages(table: Table, grads: Table | None, types: tuple[type, ...], seen: tuple[type, ...],
              matched: Sequence[Path] | None, only_text: str) -> list[str]:
    chosen = ", ".join(type_names(types))
    shown = set(types) | ({r.type for r in grads.snapshot.rows} if grads is not None else set())
    others = [t for t in seen if t not in _MARKERS and t not in types and t.__name__ not in shown]
    messages = []
    if matched is not None and not matched:
        messages.append(f"{only_text} matched no module, so nothing was captured")
    elif not table.snapshot.rows:
        if others:
            messages.append(f"nothing was sown under {chosen}; sown instead: {', '.join(type_names(others))} "
                            "(choose those types to capture them)")
        else:
            messages.append(f"nothing was sown under {chosen}: no module called sow() or perturb() "
                            "during the capture (record method outputs instead?)")
    elif others:
        messages.append(f"also sown but not chosen: {', '.join(type_names(others))}")
    if grads is not None and not grads.snapshot.rows:
        messages.append("no gradients: no module called perturb()")
    return messages
