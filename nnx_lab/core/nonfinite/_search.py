"""The search: check the arguments, run ``fn`` recorded, then (when finite) differentiate it, recorded."""

from __future__ import annotations

import logging
from typing import Any, Callable, cast

import jax
import numpy as np
from flax import nnx
from flax.nnx import graph as nnx_graph
from jax.typing import ArrayLike

from ..compat import get_value
from ..graph import path_key
from ._jaxpr import backward, call_jaxpr, forward
from ._record import Call, Patched, is_float, mark, nonfinite
from ._report import NonfiniteReport, leaf_stats, tree_stats

log = logging.getLogger("nnx_lab")

#: bad argument leaves described one by one (NaN and Inf counts, the first bad index); the rest are named
INPUT_LEAVES = 20


def unjit(fn: object) -> Callable:
    """``fn`` itself, or the Python function under a ``jax.jit`` / ``nnx.jit``; one-line errors."""
    if not callable(fn):
        raise TypeError(f"find_nonfinite: fn must be callable (a forward pass or a loss), got {type(fn).__name__}")
    while hasattr(fn, "lower"):  # jax.jit's and nnx.jit's wrappers can be lowered; plain functions cannot
        inner = getattr(fn, "__wrapped__", None)
        if not callable(inner):
            raise TypeError(
                "find_nonfinite: fn is jitted and its Python function is out of reach: pass the function "
                "you gave jax.jit / nnx.jit (the search runs it eagerly)"
            )
        fn = inner
    return fn


def _arg_path(path: tuple) -> str:
    head, *rest = path
    text = f"args[{rest[0]}]" if head == 0 else f"kwargs[{rest[0]!r}]"
    return text + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in rest[1:])


def _nonfinite_scalars(args: tuple, kwargs: dict) -> list[tuple[tuple, object]]:
    """(path, value) of the arguments ``nnx.split`` keeps static, not in its state: Python floats and numpy
    scalars holding NaN/Inf (``fn(model, x, float("inf"))``); modules are not entered (their
    attributes are the model's, not the call's)."""
    try:
        leaves = jax.tree_util.tree_flatten_with_path(
            (args, kwargs), is_leaf=lambda x: nnx_graph.is_graph_node(x) or isinstance(x, nnx.Variable)
        )[0]
    except (
        TypeError,
        ValueError,
    ) as e:  # containers jax cannot flatten: nnx.split took them; their arrays were checked
        log.debug("find_nonfinite: the arguments' scalars were not checked: %s", e, exc_info=True)
        return []
    return [
        (tuple(path_key(k) for k in path), x)
        for path, x in leaves
        if isinstance(x, (float, complex, np.floating, np.complexfloating)) and not np.isfinite(x)
    ]


def _in_order(leaves: list[tuple[tuple, object]]) -> list[tuple[tuple, object]]:
    """(argument path, value) in call order: positional ones by index, then keywords (stable within one)."""
    return sorted(leaves, key=lambda leaf: (leaf[0][0], leaf[0][1] if leaf[0][0] == 0 else 0))


def _module_paths(paths: list[tuple]) -> list[str]:
    """Module paths as users write them (``blocks.2.linear``); the argument is named only when
    several arguments hold modules."""
    roots = {p[:2] for p in paths}
    out = []
    for p in paths:
        inner = ".".join(str(k) for k in p[2:])
        if len(roots) > 1:
            inner = _arg_path(p[:2]) + ("." + inner if inner else "")
        out.append(inner)
    return out


def _flat(state: nnx.State) -> list[tuple[tuple, object]]:
    return [(tuple(p), get_value(v) if isinstance(v, nnx.Variable) else v) for p, v in nnx.to_flat_state(state)]


def _loss(out: object) -> jax.Array | None:
    """The scalar a loss returns (the first element of ``(loss, aux)``), or None."""
    x: Any = out[0] if isinstance(out, (tuple, list)) and out else out  # the user's loss, as returned
    return x if is_float(x) and x.shape == () else None


def _bad(tree: object) -> bool:
    return any(nonfinite(x) for x in jax.tree.leaves(tree))


def _owner(path: tuple, sites: list[tuple]) -> int | None:
    best = None
    for i, site in enumerate(sites):
        if path[: len(site)] == site and (best is None or len(site) > len(sites[best])):
            best = i
    return best


def _innermost(candidates: list[Call], calls: list[Call]) -> list[Call]:
    """The candidates no other candidate is called inside, the last to finish (first in the backward) first."""
    inner = [c for c in candidates if not any(o.index != c.index and _descends(o, c, calls) for o in candidates)]
    return sorted(inner or candidates, key=lambda c: -c.done)


def _descends(child: Call, ancestor: Call, calls: list[Call]) -> bool:
    p = child.parent
    while p is not None:
        if p == ancestor.index:
            return True
        p = calls[p].parent
    return False


def _locate(report: NonfiniteReport, call: Call, names: list[str], calls: list[Call], sites: list[tuple]) -> None:
    report.module_path, report.module_class = names[call.site], call.cls.__name__
    report.method, report.occurrence = call.method, call.occurrence
    chain, c = [], call
    while c is not None:  # the culprit and the calls around it, outermost first
        site = sites[c.site]
        chain.append(
            {
                "path": names[c.site] or "(root)",
                "class": c.cls.__name__,
                "method": c.method,
                "inputs": tree_stats("", c.inputs[0]) + tree_stats("kwargs", c.inputs[1]),
                "outputs": tree_stats("out", c.outputs),
                "bad_variables": [
                    ".".join(str(k) for k in p[len(site) :]) for p, x in _flat(c.state[1]) if nonfinite(x)
                ],
            }
        )
        c = calls[c.parent] if c.parent is not None else None
    report.path_calls = chain[::-1]


def _primitive(report: NonfiniteReport, call: Call, out_cts: dict | None = None) -> None:
    """Name the primitive inside ``call`` (its jaxpr walked forward, or backward from ``out_cts``)."""
    try:
        closed, values, kept = call_jaxpr(call)
        if out_cts is None:
            chain = forward(closed.jaxpr, list(closed.consts), values)
        else:
            cts = [out_cts.get(i) for i in kept]
            chain = backward(closed.jaxpr, list(closed.consts), values, cts)
    except Exception as e:  # a boundary: the module is named even when its jaxpr cannot be walked
        log.warning("find_nonfinite: could not walk the jaxpr of %s: %s", call.cls.__name__, e, exc_info=True)
        report.note = f"the primitive was not searched: {type(e).__name__}: {e}".splitlines()[0]
        return
    if chain:
        report.primitive_chain = [s["label"] for s in chain]
        report.primitive = chain[-1]["primitive"]
        report.source = next((s["source"] for s in reversed(chain) if s["source"]), None)


def find_nonfinite(fn: Callable, *args: object, **kwargs: object) -> NonfiniteReport:
    """Where NaN/Inf first appears in ``fn(*args, **kwargs)``: forward, backward or already in the input.

    ``fn`` may be wrapped in ``jax.jit``/``nnx.jit`` (its Python function is run, outside any jit).
    Raises a one-line ``TypeError`` when ``fn`` is not callable or no module is in the arguments,
    and a ``ValueError`` when the forward is finite but ``fn`` returns no scalar loss to differentiate.
    """
    fn = unjit(fn)
    try:
        graphdef, state = nnx.split((args, kwargs))
    except Exception as e:
        raise TypeError(f"find_nonfinite: fn's arguments cannot be copied with nnx.split: {e}".splitlines()[0]) from e
    bad_leaves = _in_order([(p, x) for p, x in _flat(state) if nonfinite(x)] + _nonfinite_scalars(args, kwargs))
    bad = [_arg_path(p) for p, _ in bad_leaves]
    copy = nnx.merge(graphdef, state, copy=True)  # new Variables: the caller's are never written
    sites, classes = mark(copy)
    if not sites:
        raise TypeError("find_nonfinite: no nnx.Module in fn's arguments (pass the model as fn takes it)")
    if bad:  # the first INPUT_LEAVES described (counts and the first bad index, reduced on device)
        described = [leaf_stats(name, cast(ArrayLike, x)) for name, (_, x) in zip(bad[:INPUT_LEAVES], bad_leaves)]
        return NonfiniteReport("input", bad_leaves=bad, inputs=described)
    names = _module_paths(sites)
    marked, start = nnx.split(copy)  # both runs start from this state: RNG counts and stats alike

    a, k = nnx.merge(marked, start, copy=True)
    with Patched(classes) as patched, jax.disable_jit():
        out = fn(*a, **k)
    calls = patched.recorder.calls
    report = NonfiniteReport(None, calls=len(calls))
    if _bad(out) or any(_bad(c.outputs) for c in calls):
        return _forward(report, calls, names, sites)
    loss = _loss(out)
    if loss is None:
        shape = getattr(out, "shape", type(out).__name__)
        raise ValueError(
            f"find_nonfinite: the forward pass is finite and fn returned {shape}, not a scalar loss: "
            "pass a loss function to search the backward pass"
        )
    return _backward(report, fn, marked, start, classes, calls, names, sites)


def _forward(report: NonfiniteReport, calls: list[Call], names: list[str], sites: list[tuple]) -> NonfiniteReport:
    report.direction = "forward"
    done = sorted(calls, key=lambda c: c.done)
    bad_out = [c for c in done if _bad(c.outputs)]
    clean = [c for c in bad_out if not _bad(c.inputs) and not _bad(c.state[1])]
    call = (clean or bad_out or [None])[0]
    if call is None:
        report.note = "every module call's output was finite: the NaN/Inf came from fn's own code"
        return report
    _locate(report, call, names, calls, sites)
    culprit = report.path_calls[-1]  # its statistics, as the chain of calls has them
    report.inputs, report.outputs, report.bad_variables = (
        culprit["inputs"],
        culprit["outputs"],
        culprit["bad_variables"],
    )
    if clean:
        _primitive(report, call)
    else:
        report.note = "its inputs or Variables were already non-finite when it was called"
    return report


def _backward(
    report: NonfiniteReport,
    fn: Callable,
    marked: nnx.GraphDef,
    start: nnx.State,
    classes: set,
    calls: list[Call],
    names: list[str],
    sites: list[tuple],
) -> NonfiniteReport:
    root, params, rest = nnx.split(nnx.merge(marked, start, copy=True), nnx.Param, ...)
    taps: list[Call] = []

    def loss(params: nnx.State) -> jax.Array | None:
        a, k = nnx.merge(root, params, rest, copy=True)
        with Patched(classes, tap=True) as patched:
            out = fn(*a, **k)
        taps[:] = patched.recorder.calls
        return _loss(out)

    with jax.disable_jit():
        grads = jax.grad(loss)(params)
    bad_grads = [(p, x) for p, x in _flat(grads) if nonfinite(x)]
    if not bad_grads:
        report.note = "Checked: the forward output and every Param gradient."
        return report
    report.direction = "backward"
    own: dict[int, list[str]] = {}
    for p, _ in bad_grads:
        site = _owner(p, sites)
        if site is not None:
            own.setdefault(site, []).append(".".join(str(k) for k in p[len(sites[site]) :]))
    candidates = [
        c for c in taps if not _bad(list(c.out_cts.values())) and (_bad(list(c.in_cts.values())) or c.site in own)
    ]
    if not candidates or len(taps) != len(calls):
        report.note = "no module call's cotangent turned non-finite: the NaN/Inf came from fn's own code"
        report.bad_variables = [".".join(str(k) for k in p[2:]) for p, _ in bad_grads]
        return report
    # The innermost candidates, the first in the backward first. One that qualifies by its Params'
    # gradient alone is taken only when its own walk finds the primitive: the gradient of a module
    # called several times (a scanned stack's layers) is one sum, its walk tells the guilty call.
    order = _innermost(candidates, taps)
    for tap in order:
        trial = NonfiniteReport("backward")
        _primitive(trial, calls[tap.index], tap.out_cts)
        if trial.primitive or _bad(list(tap.in_cts.values())):
            break
    else:
        tap, trial = order[0], NonfiniteReport("backward")
    call = calls[tap.index]
    _locate(report, call, names, calls, sites)
    report.outputs = [leaf_stats(f"out[{i}]", x) for i, x in sorted(tap.out_cts.items())]
    report.inputs = [leaf_stats(f"in[{i}]", x) for i, x in sorted(tap.in_cts.items())]
    report.bad_variables = own.get(call.site, [])
    report.primitive, report.primitive_chain, report.source = trial.primitive, trial.primitive_chain, trial.source
    report.note = trial.note
    return report
