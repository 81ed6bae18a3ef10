"""One trace of a model call with every module call marked (docs/ARCHITECTURE.md: "A summary is one
trace"). Only the tracing thread's calls are recorded; other threads call the original methods.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
from flax import nnx
from jax._src.interpreters import partial_eval as pe

from .. import compat, graph
from ..graph import child_of
from ._costs import SCOPE_PREFIX

ATTR = "_nnx_lab_summary_site"


@dataclasses.dataclass
class Call:
    id: int
    site: int
    method: str
    cls: type
    parent: int | None
    inputs: tuple[tuple, dict]
    outputs: Any = None
    error: BaseException | None = None


class Recorder(graph.Recorder[Call]):
    """Each module call as a :class:`Call` under a named scope of its own (the trace's equations know
    their call); ``failed``: the innermost call an error passed through."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: Call | None = None

    def record(
        self, fn: Callable, module: object, name: str, site: int, parent: int | None, args: tuple, kwargs: dict
    ) -> Any:
        call = Call(len(self.calls), site, name, type(module), parent, (args, kwargs))
        self.calls.append(call)
        try:
            with jax.named_scope(f"{SCOPE_PREFIX}{call.id}"):
                call.outputs = fn(module, *args, **kwargs)
        except BaseException as e:
            if self.failed is None:  # the innermost call the error passed through
                self.failed, call.error = call, e
            raise
        return call.outputs


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


class Patched(graph.Recording[Recorder]):
    """The trace's recording (one summary traces at a time; the classes are :meth:`add`-ed as the trace
    merges its copy), with jax's tracer error message muted meanwhile (:func:`_no_origin`)."""

    def __init__(self) -> None:
        super().__init__("summary", ATTR, Recorder())

    def __enter__(self) -> Patched:
        super().__enter__()
        self.origin = vars(pe.DynamicJaxprTracer).get("_origin_msg")
        if self.origin is not None:  # a jax with this method (never raising with the lock held)
            pe.DynamicJaxprTracer._origin_msg = _no_origin
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.origin is not None and vars(pe.DynamicJaxprTracer).get("_origin_msg") is _no_origin:
                pe.DynamicJaxprTracer._origin_msg = self.origin
        finally:
            super().__exit__(*exc)
