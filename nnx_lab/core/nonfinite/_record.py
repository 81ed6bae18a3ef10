"""Every module call of one run of ``fn`` recorded: inputs, outputs, the module's state before it.

Each module of the copy carries its site number as a static attribute, so it survives
``nnx.split``/``merge`` inside ``nnx.scan`` and ``nnx.vmap``; no ``nnx.capture`` is needed (Colab's
flax 0.11.2 has none). In ``tap`` mode (the backward run, under ``jax.grad``) each floating input and
output leaf goes through an identity ``custom_vjp`` whose backward stores the cotangent that reached
it: possible because the run is eager, never jitted.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.core import Tracer

from ..graph import hook, module_methods, unhook

ATTR = "_nnx_lab_nonfinite_site"
_lock = threading.Lock()  # the class patches are process-wide: one search at a time
_recorder: Recorder | None = None


@dataclasses.dataclass
class Call:
    index: int  # in start order
    site: int
    method: str
    cls: type
    parent: int | None
    occurrence: int  # how many calls of this site and method came before (a scan's layer index)
    inputs: Any = None  # (args, kwargs)
    state: Any = None  # (graphdef, state) of the module before the call
    outputs: Any = None
    done: int = -1  # completion order
    in_cts: dict = dataclasses.field(default_factory=dict)  # input leaf index -> cotangent
    out_cts: dict = dataclasses.field(default_factory=dict)  # output leaf index -> cotangent


class Recorder:
    def __init__(self, tap: bool = False) -> None:
        self.thread = threading.get_ident()
        self.tap = tap
        self.calls: list[Call] = []
        self.stack: list[tuple[Call, int]] = []
        self.seen: dict[tuple[int, str], int] = {}
        self.finished = 0


def is_float(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray)) and jnp.issubdtype(x.dtype, jnp.inexact)


def nonfinite(x: Any) -> bool:
    """Whether ``x`` is a concrete floating array holding NaN or Inf (a tracer is never judged)."""
    return is_float(x) and not isinstance(x, Tracer) and not bool(jnp.isfinite(x).all())


def _tap(store: dict, key: int) -> Callable:
    @jax.custom_vjp
    def tap(x):
        return x

    def bwd(_, ct):
        store[key] = ct if key not in store else store[key] + ct
        return (ct,)

    tap.defvjp(lambda x: (x, None), bwd)
    return tap


def _tapped(tree: Any, store: dict) -> Any:
    leaves, treedef = jax.tree.flatten(tree)
    return treedef.unflatten([_tap(store, i)(x) if is_float(x) else x for i, x in enumerate(leaves)])


def _wrap(fn: Callable, name: str) -> Callable:
    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = _recorder
        site = vars(self).get(ATTR) if hasattr(self, "__dict__") else None
        if rec is None or site is None or rec.thread != threading.get_ident():
            return fn(self, *args, **kwargs)
        if rec.stack and rec.stack[-1][1] == id(self) and rec.stack[-1][0].method == name:
            return fn(self, *args, **kwargs)  # super().__call__ of the same call: one record
        key = (site, name)
        occurrence = rec.seen.get(key, 0)
        rec.seen[key] = occurrence + 1
        parent = rec.stack[-1][0].index if rec.stack else None
        call = Call(len(rec.calls), site, name, type(self), parent, occurrence)
        rec.calls.append(call)
        if rec.tap:
            args, kwargs = _tapped((args, kwargs), call.in_cts)
        else:
            call.inputs = (args, kwargs)
            graphdef, state = nnx.split(self)
            # new Variable objects holding today's arrays: the call may update the live ones
            call.state = (graphdef, jax.tree.map(lambda x: x, state))
        rec.stack.append((call, id(self)))
        try:
            out = fn(self, *args, **kwargs)
        finally:
            rec.stack.pop()
        call.done = rec.finished
        rec.finished += 1
        if rec.tap:
            out = _tapped(out, call.out_cts)
        else:
            call.outputs = out
        return out

    return wrapper


def mark(root: Any) -> tuple[list[tuple], set]:
    """Mark every module under ``root`` (the copy) with its site; the sites' paths and classes."""
    paths, classes = [], set()
    for path, module in nnx.iter_graph(root):
        if not isinstance(module, nnx.Module):
            continue
        # a plain int is static in the graphdef, set without flax's per-attribute checks
        object.__setattr__(module, ATTR, len(paths))
        paths.append(tuple(path))
        classes.add(type(module))
    return paths, classes


class Patched:
    """Context manager: the classes' methods wrapped and a recorder active; all restored on exit."""

    def __init__(self, classes: set, tap: bool = False) -> None:
        self.classes = classes
        self.recorder = Recorder(tap)
        self.methods: list = []

    def __enter__(self) -> Patched:
        global _recorder
        _lock.acquire()
        try:
            for key in module_methods(self.classes):
                self.methods += hook([key], "find_nonfinite", functools.partial(_wrap, name=key[1]))
            _recorder = self.recorder
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        global _recorder
        try:
            _recorder = None
            unhook(self.methods, "find_nonfinite")
        finally:
            _lock.release()
