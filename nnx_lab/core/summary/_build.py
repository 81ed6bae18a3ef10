"""``summary(model, *args)``: trace the call once, cost it per module call, build the rows."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import jax
import numpy as np
from flax import nnx

from .. import compat
from .._gc import paused_gc
from ..checks import as_number
from ..graph import index_graph, path_text
from ._costs import tally as cost_tally
from ._data import Summary, SummaryError
from ._formats import describe, leaves_bytes
from ._memory import PeakMemory
from ._trace import Patched, mark

if TYPE_CHECKING:
    from ._trace import Recorder

_log = logging.getLogger("nnx_lab")


def _abstract(x: object) -> object:
    """An array leaf as a ShapeDtypeStruct (its sharding kept); anything else as it is."""
    if isinstance(x, jax.ShapeDtypeStruct):
        return x
    if isinstance(x, jax.Array):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None))
    if isinstance(x, np.ndarray):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)
    return x


def _is_static(x: object) -> bool:
    """A Python scalar (bool, int, float, complex, str; None is no leaf): the call sees it as given, as
    when the module is called (``deterministic=False``, ``train=True`` drive Python ``if``s);
    arrays and numpy scalars are traced."""
    return isinstance(x, (bool, int, float, complex, str)) and not isinstance(x, np.generic)


def _split_static(args: tuple, kwargs: dict) -> tuple[list, Callable[[list], tuple]]:
    """``(traced leaves as abstract values, rebuild)``: ``rebuild(leaves)`` is ``(args, kwargs)`` again,
    the Python scalars put back in their places."""
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    static = {i: x for i, x in enumerate(leaves) if _is_static(x)}
    traced = [_abstract(x) for i, x in enumerate(leaves) if i not in static]

    def rebuild(values: list) -> tuple:
        it = iter(values)
        return jax.tree_util.tree_unflatten(
            treedef, [static[i] if i in static else next(it) for i in range(len(leaves))]
        )

    return traced, rebuild


def _check_args(args: tuple, kwargs: dict) -> None:
    named = [(f"argument {i + 1}", a) for i, a in enumerate(args)] + [(f"argument {k}=", v) for k, v in kwargs.items()]
    for name, arg in named:
        for where, leaf in jax.tree_util.tree_leaves_with_path(arg):
            if isinstance(
                leaf,
                (
                    jax.Array,
                    jax.ShapeDtypeStruct,
                    np.ndarray,
                    np.generic,
                    bool,
                    int,
                    float,
                    complex,
                ),
            ):
                continue
            if isinstance(leaf, str):
                continue  # static arguments: passed through as they are
            raise SummaryError(
                f"{name}{jax.tree_util.keystr(where)} is {type(leaf).__name__}, "
                "not an array, a jax.ShapeDtypeStruct or a number"
            )


def _variables(variables: dict, module_paths: set) -> tuple[dict, dict, bool, tuple[str, ...]]:
    """own and total ``{variable type: [count, bytes]}`` per module path (``variables``: path -> Variable,
    from the model's index), whether a Variable's metadata names a layer axis (flax's
    ``transform_metadata``: then stacked modules are looked for), and which of the types are
    parameters (``nnx.Param`` and its subclasses: what the params column counts)."""
    from ..snapshot import metadata_axis

    layered = False
    param_types: set[str] = set()
    own: dict = {p: {} for p in module_paths}
    total: dict = {p: {} for p in module_paths}
    for path, var in variables.items():
        value = compat.get_value(var)
        leaves = [value] if isinstance(value, jax.Array) else jax.tree.leaves(value)
        count = sum(int(math.prod(getattr(x, "shape", ()) or ())) for x in leaves)
        nbytes = leaves_bytes(leaves)
        kind = compat.variable_type(var)
        name = kind.__name__
        if issubclass(kind, nnx.Param):
            param_types.add(name)
        if not layered and leaves:
            layered = metadata_axis(var.get_metadata(), getattr(leaves[0], "ndim", None)) is not None
        owner = next((path[:k] for k in range(len(path) - 1, -1, -1) if path[:k] in module_paths), ())
        for k in range(len(owner) + 1):
            prefix = owner[:k]
            if prefix not in module_paths:
                continue
            for table in (total[prefix],) + ((own[prefix],) if prefix == owner else ()):
                entry = table.setdefault(name, [0, 0])
                entry[0] += count
                entry[1] += nbytes
    return own, total, layered, tuple(sorted(param_types))


def _trace_program(
    model: nnx.Module, sites: list, method: str, args: tuple, kwargs: dict, grad: bool
) -> tuple[jax.stages.Traced, Recorder]:
    """``(traced, recorder)``: the call traced once (``jax.jit(...).trace``), the calls of the modules at
    ``sites`` (the model's module paths) recorded."""
    graphdef, state = nnx.split(model)
    state = jax.tree.map(_abstract, state)
    leaves, rebuild = _split_static(args, kwargs)  # Python scalars stay static: not traced as arrays

    def merged(state: nnx.State) -> nnx.Module:
        """A fresh copy of the model inside the trace, marked, its classes' methods wrapped."""
        module = nnx.merge(graphdef, state)
        patched.add(mark(module, sites))
        return module

    def forward(state: nnx.State, leaves: list) -> list[jax.Array]:
        args, kwargs = rebuild(leaves)
        out = getattr(merged(state), method)(*args, **kwargs)
        return [x for x in jax.tree.leaves(out) if isinstance(x, jax.Array)]

    def backward(state: nnx.State, leaves: list) -> tuple:
        args, kwargs = rebuild(leaves)
        gdef, params, rest = nnx.split(merged(state), nnx.Param, ...)

        def f(params: nnx.State) -> list[jax.Array]:
            # fresh Variables for ``rest`` at this trace level: a BatchNorm may update its statistics
            out = getattr(nnx.merge(gdef, params, jax.tree.map(lambda v: v, rest)), method)(*args, **kwargs)
            return [
                x
                for x in jax.tree.leaves(out)
                if isinstance(x, jax.Array) and jax.numpy.issubdtype(x.dtype, jax.numpy.inexact)
            ]

        out, vjp = jax.vjp(f, params)
        return out, vjp([jax.numpy.ones_like(x) for x in out])

    with Patched() as patched:
        recorder = patched.recorder
        try:
            traced = jax.jit(backward if grad else forward).trace(state, leaves)
        except Exception as e:
            raise _call_error(e, recorder, sites) from e
    return traced, recorder


def _call_error(error: Exception, recorder: Recorder, sites: list) -> Exception:
    call = recorder.failed
    from ..text import one_line

    if call is None:
        return SummaryError(f"the call raised {one_line(error)} outside any module")
    args, kwargs = call.inputs
    where = path_text(sites[call.site]) or "(the model)"
    shapes = describe((args, kwargs) if kwargs else args)
    return SummaryError(f"{where} ({call.cls.__name__}.{call.method}) raised {one_line(error)}; its inputs: {shapes}")


@paused_gc()  # one trace makes ~10^5 short-lived objects: the collector's passes were a fifth of a summary
def summary(
    model: nnx.Module,
    *args: object,
    method: str = "__call__",
    grad: bool = False,
    memory: bool = True,
    depth: int | None = None,
    layers: Mapping[str, int | None] | None = None,
    **kwargs: object,
) -> Summary:
    """Shapes, parameters, FLOPs and bytes of every module call of ``model.<method>(*args, **kwargs)``,
    from one trace (see :mod:`nnx_lab.core.summary`)."""
    started = time.perf_counter()
    if not isinstance(model, nnx.Module):
        raise SummaryError(f"summary needs an nnx.Module, got {type(model).__name__}")
    fn = getattr(type(model), method, None)
    if not isinstance(method, str) or fn is None or not callable(fn):
        raise SummaryError(f"{type(model).__name__} has no method {method!r}")
    if depth is not None:
        number = as_number(depth, integer=True)  # np.int64(2) too
        if not isinstance(number, int) or number < 0:
            raise SummaryError(f"depth must be a non-negative integer, got {depth!r}")
        depth = number
    _check_args(args, kwargs)
    import inspect

    try:
        inspect.signature(fn).bind(model, *args, **kwargs)
    except TypeError as e:
        raise SummaryError(f"{type(model).__name__}.{method}{_sig(fn)}: {e}") from None
    except ValueError:
        pass  # no signature to check (a builtin): the call itself will say
    index = index_graph(model)  # one walk: the module paths (the trace's sites) and the Variables
    sites = list(index.modules)
    traced, recorder = _trace_program(model, sites, method, args, kwargs, grad=False)
    tally = cost_tally(traced.jaxpr)
    back = None
    if grad:
        traced_grad, grad_recorder = _trace_program(model, sites, method, args, kwargs, grad=True)
        back = cost_tally(traced_grad.jaxpr)
    # compiled only when the peak memory is asked for (Summary.memory, or the widget's thread)
    peak = PeakMemory(traced_grad if grad else traced) if memory else PeakMemory(None)
    from ._rows import build_rows

    own, total, layered, param_types = _variables(index.variables, set(sites))
    rows = build_rows(
        recorder.calls,
        sites,
        tally,
        None if back is None else (back, grad_recorder.calls),
        own,
        total,
        model if layered or layers is not None else None,
        layers,
    )
    if rows and rows[0].depth == 0 and not rows[0].module_path:
        rows[0].inputs = describe(args if not kwargs else (args, kwargs))  # the caller's arrays: their sharding
    if depth is not None:
        rows = [r for r in rows if r.depth <= depth]
    return Summary(
        model_class=type(model).__name__,
        method=method,
        rows=rows,
        flops=tally.total[0],
        transcendentals=tally.total[1],
        bytes_accessed=tally.total[2],
        backward_flops=None if back is None else back.total[0] - tally.total[0],
        backward_bytes=None if back is None else back.total[2] - tally.total[2],
        backend=jax.default_backend(),
        uncosted=dict(tally.uncosted),
        param_types=param_types,
        inputs=describe(args if not kwargs else (args, kwargs)),
        seconds=time.perf_counter() - started,
        peak=peak,
    )


def _sig(fn: Callable) -> str:
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
        return "(" + ", ".join(str(p) for p in params) + ")"
    except (TypeError, ValueError):
        return "(...)"
