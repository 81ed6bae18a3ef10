"""One trace of a model call with every module call marked (docs/ARCHITECTURE.md: "A summary is one
trace"). Only the tracing thread's calls are recorded; other threads call the original methods.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any

import jax
from flax import nnx
from jax._src.interpreters import partial_eval as pe

from .. import compat
from ..graph import child_of, hook, module_methods, unhook
from ._costs import SCOPE_PREFIX

ATTR = "_nnx_lab_summary_site"
_lock = threading.Lock()  # one summary traces at a time: the class patches are process-wide


@dataclasses.dataclass
class Call:
    id: int
    site: int
    method: str
    cls: type
    parent: int | None
    inputs: Any = None
    outputs: Any = None
    error: BaseException | None = None


class Recorder:
    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.calls: list[Call] = []
        self.stack: list[tuple[Call, int]] = []
        self.failed: Call | None = None


_recorder: Recorder | None = None


def _wrap(fn: Any, name: str) -> Any:
    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = _recorder
        site = vars(self).get(ATTR) if hasattr(self, "__dict__") else None
        if rec is None or site is None or rec.thread != threading.get_ident():
            return fn(self, *args, **kwargs)
        if rec.stack and rec.stack[-1][1] == id(self) and rec.stack[-1][0].method == name:
            return fn(self, *args, **kwargs)  # super().__call__ of the same call: one row
        parent = rec.stack[-1][0].id if rec.stack else None
        call = Call(len(rec.calls), site, name, type(self), parent, inputs=(args, kwargs))
        rec.calls.append(call)
        rec.stack.append((call, id(self)))
        try:
            with jax.named_scope(f"{SCOPE_PREFIX}{call.id}"):
                out = fn(self, *args, **kwargs)
        except BaseException as e:
            if rec.failed is None:  # the innermost call the error passed through
                rec.failed, call.error = call, e
            raise
        finally:
            rec.stack.pop()
        call.outputs = out
        return out

    return wrapper


def mark(module: Any, sites: list) -> set:
    """Mark each module of ``module`` (a fresh copy merged inside the trace, never the user's model) with
    its site, its index in ``sites`` (the model's module paths: the copy has the same); the classes met."""
    found = _at_paths(module, sites)
    if found is None:  # a path not stepped to by attribute, index or key: flax's walk of the copy finds them
        by_path = {tuple(path): m for path, m in compat.iter_modules(module)}
        found = [by_path[path] for path in sites]
    for i, m in enumerate(found):
        # as tabulate marks them; a plain int is static in the graphdef. Set as flax sets an attribute
        # that is not data (no record in _pytree__nodes means static), without flax's per-call checks.
        object.__setattr__(m, ATTR, i)
    return {type(m) for m in found}


def _at_paths(root: Any, paths: list) -> list | None:
    """The Modules at ``paths`` under ``root``, stepped to by key; None where one is not found."""
    objects = {(): root}
    out = []
    for path in paths:
        for k in range(1, len(path) + 1):
            if path[:k] not in objects:
                parent = objects[path[: k - 1]]
                objects[path[:k]] = None if parent is None else child_of(parent, path[k - 1])
        found = objects[path]
        if not isinstance(found, nnx.Module):
            return None
        out.append(found)
    return out


def _no_origin(self: Any) -> str:
    """Replaces jax's ``DynamicJaxprTracer._origin_msg`` while we trace. flax 0.12's
    ``Variable.set_value`` reads ``value.sharding``, which on a tracer raises an AttributeError whose
    message jax builds by searching the whole program traced so far: a BatchNorm or Dropout update
    costs time quadratic in the program (2 of a 24-block transformer's 2.6 s of tracing)."""
    return ""


class Patched:
    """Context manager: the classes' methods wrapped and a recorder active; everything restored on exit."""

    OWNER = "summary"

    def __init__(self) -> None:
        self.methods: list = []  # (class, name) hooked
        self.recorder = Recorder()

    def add(self, classes: set) -> None:
        """Wrap the methods of ``classes`` (those not wrapped yet) until exit."""
        done = set(self.methods)
        for key in module_methods(classes):
            if key not in done:
                self.methods += hook([key], self.OWNER, functools.partial(_wrap, name=key[1]))

    def __enter__(self) -> Patched:
        global _recorder
        _lock.acquire()
        self.origin = vars(pe.DynamicJaxprTracer)["_origin_msg"]
        pe.DynamicJaxprTracer._origin_msg = _no_origin
        _recorder = self.recorder
        return self

    def __exit__(self, *exc: Any) -> None:
        global _recorder
        try:
            _recorder = None
            unhook(self.methods, self.OWNER)
            if vars(pe.DynamicJaxprTracer).get("_origin_msg") is _no_origin:
                pe.DynamicJaxprTracer._origin_msg = self.origin
        finally:
            _lock.release()
