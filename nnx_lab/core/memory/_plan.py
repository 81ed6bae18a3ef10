"""Will this step fit: ``memory(step, *args, **kwargs)`` compiles ``step`` without running it and
reads XLA's memory analysis (docs/guide/memory.md says how each kind of step is lowered).
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import jax
from flax import nnx
from flax.nnx import graph as nnx_graph
from jax.core import Tracer

from .. import compat
from ..render import format_bytes, plan_html, plan_text
from ..text import first_line, one_line
from ._ledger import device_name, memory_stats

if TYPE_CHECKING:
    from ..compat import Device
    from ._data import PrettyPrinter

FIELDS = ("argument", "output", "alias", "temp", "generated_code")


class _Compiled(Protocol):
    """A compiled step (``jax.stages.Compiled``, or flax's wrapper of one)."""

    @property
    def input_shardings(self) -> object: ...

    def memory_analysis(self) -> object: ...


class _Lowered(Protocol):
    """A lowered step (``jax.stages.Lowered``, or flax's wrapper of one, which holds it as ``lowered``)."""

    def compile(self) -> _Compiled: ...


class _Staged(Protocol):
    """What :func:`_donations` reads of jax's ``Lowered`` (an older jax has no ``out_info``: said in a note)."""

    @property
    def args_info(self) -> object: ...

    @property
    def out_info(self) -> object: ...


@dataclass(frozen=True)
class Donation:
    """Donating ``argument`` (``donate_argnums``/``donate_argnames``) would let XLA reuse up to ``bytes``."""

    argument: str
    bytes: int


@dataclass(frozen=True)
class StepPlan:
    """XLA's memory analysis of one compiled step, per device (``analysis`` is None where the
    backend has none: ``note`` says so). ``total`` = arguments + outputs + temporaries + generated
    code - aliased; ``limit``/``available`` from the device's ``memory_stats()`` (None on CPU)."""

    step_name: str
    device: str
    analysis: dict | None
    limit: int | None
    available: int | None
    donations: tuple[Donation, ...]
    note: str = ""

    @property
    def total(self) -> int | None:
        a = self.analysis
        if a is None:
            return None
        return a["argument"] + a["output"] + a["temp"] + a["generated_code"] - a["alias"]

    @property
    def fits(self) -> bool | None:
        return None if self.total is None or self.available is None else self.total <= self.available

    @property
    def verdict(self) -> str:
        if self.total is None:
            return self.note
        if self.available is None:
            return f"{self.device} has no memory limit to compare with (no memory_stats()): the step needs {format_bytes(self.total)}"
        free = self.available - self.total
        if free >= 0:
            return f"fits with {format_bytes(free)} free (of {format_bytes(self.available)} available on {self.device})"
        return f"needs {format_bytes(-free)} more (has {format_bytes(self.available)} available on {self.device})"

    def to_text(self) -> str:
        return plan_text(self)

    def __repr__(self) -> str:
        return plan_text(self)

    def _repr_pretty_(self, p: PrettyPrinter, cycle: bool) -> None:
        p.text(plan_text(self))

    def _repr_html_(self) -> str:
        return plan_html(self)

    def to_dict(self) -> dict:
        return {
            "step": self.step_name,
            "device": self.device,
            "analysis": dict(self.analysis) if self.analysis else None,
            "total": self.total,
            "limit": self.limit,
            "available": self.available,
            "fits": self.fits,
            "donations": [{"argument": d.argument, "bytes": d.bytes} for d in self.donations],
            "note": self.note,
        }


def _has_node(tree: object) -> bool:
    return any(nnx_graph.is_graph_node(x) for x in jax.tree.leaves(tree, is_leaf=nnx_graph.is_graph_node))


def _is_node(x: object) -> bool:
    return isinstance(x, nnx.Variable) or nnx_graph.is_graph_node(x)


def _leaves(value: object) -> list:
    """Every array-like (shape and dtype) ``value`` holds, a module's Variables included."""
    if nnx_graph.is_graph_node(value) and not isinstance(value, nnx.Variable):
        value = nnx.state(value)
    out = []
    for leaf in jax.tree.leaves(value, is_leaf=_is_node):
        if isinstance(leaf, nnx.Variable):
            out += [x for x in jax.tree.leaves(compat.get_value(leaf)) if hasattr(x, "shape") and hasattr(x, "dtype")]
        elif nnx_graph.is_graph_node(leaf):
            out += _leaves(leaf)
        elif hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            out.append(leaf)
    return out


def check_no_tracer(args: tuple, kwargs: dict) -> None:
    for leaf in _node_leaves(args, kwargs):
        if isinstance(leaf, Tracer):
            raise TypeError(
                "nnx_lab.memory: an argument is a jax tracer (memory() was called inside jit/grad/vmap): "
                "call it outside any jax transformation"
            )


def _node_leaves(args: tuple, kwargs: dict) -> list:
    return [x for a in (*args, *kwargs.values()) for x in _leaves(a)]


def _name(step: Callable[..., object]) -> str:
    fn = getattr(step, "fun", None) or getattr(step, "__wrapped__", None) or step
    return getattr(fn, "__name__", None) or type(step).__name__


def _lower(step: Any, args: tuple, kwargs: dict) -> _Lowered:  # the user's step: a function, a jitted one, a Module
    if isinstance(step, nnx.Module):
        return nnx.jit(lambda module, *a, **k: module(*a, **k)).lower(step, *args, **kwargs)
    if callable(getattr(step, "lower", None)):
        return step.lower(*args, **kwargs)
    if _has_node((args, kwargs)):
        return nnx.jit(step).lower(*args, **kwargs)
    return jax.jit(step).lower(*args, **kwargs)


def plan(step: Callable[..., object], args: tuple, kwargs: dict) -> StepPlan:
    name = type(step).__name__ if isinstance(step, nnx.Module) else _name(step)
    check_no_tracer(args, kwargs)
    try:
        lowered = _lower(step, args, kwargs)
        compiled = lowered.compile()
    except Exception as e:  # noqa: BLE001 - boundary: the user's step rejected its arguments
        raise ValueError(f"nnx_lab.memory: {name} could not be compiled with these arguments: {one_line(e)}") from None
    device = _device(compiled)
    try:
        analysis = compiled.memory_analysis()
    except Exception as e:  # noqa: BLE001 - a backend without memory analysis: said in one line
        analysis, why = None, first_line(str(e))
    else:
        why = ""
    values = None if analysis is None else {f: int(getattr(analysis, f"{f}_size_in_bytes", 0) or 0) for f in FIELDS}
    if values is None:
        note = f"{device.platform} has no memory analysis for compiled programs" + (f" ({why})" if why else "")
        return StepPlan(name, device_name(device), None, None, None, (), note)
    if any(v < 0 for v in values.values()):
        note = f"{device.platform}'s memory analysis returned -1 (unknown) for some fields: {values}"
        return StepPlan(name, device_name(device), None, None, None, (), note)
    stats = memory_stats(device)
    limit = stats.get("bytes_limit")
    available = None
    if limit is not None:
        resident = sum(_resident(x, device) for x in _node_leaves(args, kwargs))
        available = limit - stats.get("bytes_in_use", 0) + resident
    donations, note = _donations(step, lowered, args, kwargs)
    return StepPlan(name, device_name(device), values, limit, available, donations, note)


def _device(compiled: _Compiled) -> Device:
    try:
        for sharding in jax.tree.leaves(compiled.input_shardings):
            return min(sharding.device_set, key=lambda d: d.id)
    except Exception:  # noqa: BLE001 - no shardings to read: the default device
        pass
    return jax.devices()[0]


def _resident(x: object, device: Device) -> int:
    """Bytes of a real argument array already on ``device`` (its memory is counted in bytes_in_use)."""
    if not isinstance(x, jax.Array) or x.is_deleted():
        return 0
    return sum(int(s.data.nbytes) for s in x.addressable_shards if s.device == device)


def _donations(
    step: Callable[..., object], lowered: _Lowered, args: tuple, kwargs: dict
) -> tuple[tuple[Donation, ...], str]:
    """Arguments not donated whose arrays match an output's shape and dtype: XLA could write that
    output into them (``donate_argnums``)."""
    inner = cast("_Staged", getattr(lowered, "lowered", lowered))
    try:
        outputs = Counter((tuple(o.shape), str(o.dtype)) for o in jax.tree.leaves(inner.out_info))
        flags = [bool(getattr(i, "donated", False)) for i in jax.tree.leaves(inner.args_info)]
    except Exception as e:  # noqa: BLE001 - an older jax without out_info: no suggestion
        return (), f"donation not assessed: {one_line(e)}"
    names = _argument_names(step, args, kwargs)
    per_arg = [_leaves(a) for a in (*args, *kwargs.values())]
    if len(flags) == sum(len(p) for p in per_arg):
        donated, at = [], 0
        for p in per_arg:
            donated.append(bool(p) and all(flags[at : at + len(p)]))
            at += len(p)
    elif any(flags):
        return (), "some arguments are donated already: donation not assessed per argument"
    else:
        donated = [False] * len(per_arg)
    found = []
    for name, leaves, is_donated in zip(names, per_arg, donated):
        if is_donated:
            continue
        saved = 0
        for leaf in leaves:
            key = (tuple(leaf.shape), str(leaf.dtype))
            if outputs[key] > 0:
                outputs[key] -= 1
                saved += int(leaf.dtype.itemsize) * math.prod(leaf.shape)
        if saved:
            found.append(Donation(name, saved))
    return tuple(sorted(found, key=lambda d: -d.bytes)), ""


def _argument_names(step: Callable[..., object], args: tuple, kwargs: dict) -> list[str]:
    if isinstance(step, nnx.Module):
        fn = type(step).__call__
        offset = 1  # self
    else:
        fn = getattr(step, "fun", None) or getattr(step, "__wrapped__", None) or step
        offset = 0
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    params = params[offset:]
    names = [f"{params[i]} (argument {i})" if i < len(params) else f"argument {i}" for i in range(len(args))]
    return names + [f"{k}=" for k in kwargs]
