"""Every module call of one run of ``fn`` recorded: inputs, outputs, the module's state before it.

Each module of the copy carries its site number as a static attribute, so it survives
``nnx.split``/``merge`` inside ``nnx.scan`` and ``nnx.vmap``; no ``nnx.capture`` is needed (Colab's
flax 0.11.2 has none). In ``tap`` mode (the backward run, under ``jax.grad``) each floating input and
output leaf goes through an identity ``custom_vjp`` whose backward stores the cotangent that reached
it: possible because the run is eager, never jitted.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.core import Tracer

from .. import graph

ATTR = "_nnx_lab_nonfinite_site"


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


class Recorder(graph.Recorder[Call]):
    """Each module call as a :class:`Call`: its inputs, the module's state before it and its outputs,
    or (``tap``) the cotangents reaching its floating inputs and outputs."""

    def __init__(self, tap: bool = False) -> None:
        super().__init__()
        self.tap = tap
        self.seen: dict[tuple[int, str], int] = {}
        self.finished = 0

    def record(
        self, fn: Callable, module: object, name: str, site: int, parent: int | None, args: tuple, kwargs: dict
    ) -> Any:
        occurrence = self.seen.get((site, name), 0)
        self.seen[(site, name)] = occurrence + 1
        call = Call(len(self.calls), site, name, type(module), parent, occurrence)
        self.calls.append(call)
        if self.tap:
            args, kwargs = _tapped((args, kwargs), call.in_cts)
        else:
            call.inputs = (args, kwargs)
            graphdef, state = nnx.split(module)
            # new Variable objects holding today's arrays: the call may update the live ones
            call.state = (graphdef, jax.tree.map(lambda x: x, state))
        out = fn(module, *args, **kwargs)
        call.done = self.finished
        self.finished += 1
        if self.tap:
            return _tapped(out, call.out_cts)
        call.outputs = out
        return out


def is_float(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray)) and jnp.issubdtype(x.dtype, jnp.inexact)


def nonfinite(x: Any) -> bool:
    """Whether ``x`` is a concrete floating array holding NaN or Inf (a tracer is never judged)."""
    return is_float(x) and not isinstance(x, Tracer) and not bool(jax.device_get(jnp.isfinite(x).all()))


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


class Patched(graph.Recording[Recorder]):
    """One run recorded (one search at a time): the classes' methods hooked, all restored on exit."""

    def __init__(self, classes: set, tap: bool = False) -> None:
        super().__init__("find_nonfinite", ATTR, Recorder(tap), classes)
