"""The first primitive inside one module call that made values non-finite, forward or backward.

The call (the module's method on the recorded inputs, the module rebuilt from its recorded state with
``nnx.merge``, so the model is never changed) is traced once with ``jax.make_jaxpr`` and evaluated
equation by equation, eagerly, with our own environment:

- forward: each non-finite value remembers the equation that first made it (one whose inputs were
  finite); the culprit is the origin of the call's non-finite outputs, so a NaN a ``where`` masks
  away is never blamed;
- backward: the equations are walked in reverse from the recorded output cotangent, each one's
  cotangent rule applied with ``jax.vjp`` of that one primitive; the culprit is the first whose output
  cotangents are finite and whose input cotangents are not (``sqrt`` at 0 names ``sqrt``).

A culprit that calls a sub-jaxpr (``pjit``, ``closed_call``, ``custom_jvp_call``, ``remat``) is
entered and searched again; the chain of names is kept (``_where > div``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.extend.core import Literal as _Literal

from ._record import Call, is_float, nonfinite

if TYPE_CHECKING:  # jax.extend.core on jax 0.7 and 0.10 alike; read only by the checker
    from jax.extend.core import ClosedJaxpr, Jaxpr, JaxprEqn, Var
    from jax.typing import ArrayLike

_SUB = ("jaxpr", "call_jaxpr", "fun_jaxpr")  # params that hold a sub-jaxpr we can enter


def _library_dirs() -> tuple[str, ...]:
    import flax
    import jaxlib

    files = [m.__file__ for m in (jax, jaxlib, flax)]  # regular packages: each has its __init__'s file
    dirs = [os.path.dirname(f) for f in files if f is not None]
    dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # nnx_lab/core
    return tuple(d + os.sep for d in dirs)


def source_line(eqn: JaxprEqn) -> str | None:
    """``file:line (function)`` of the innermost frame outside jax, flax and nnx_lab, else outside jax
    (a flax layer's own line: jax keeps only the innermost frames); None if unknown."""
    try:
        frames = list(eqn.source_info.traceback.frames)  # pyright: ignore[reportOptionalMemberAccess] - None: caught below
    except AttributeError:  # no traceback recorded (jax_include_full_tracebacks off) or another jax
        return None
    skip = _library_dirs()
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    for i, frame in enumerate(frames):  # innermost first: the frames past our own call are not the call's
        if frame.file_name.startswith(here):
            frames = frames[:i]
            break
    for dirs in (skip, skip[:2]):
        for frame in frames:
            if frame.file_name and not frame.file_name.startswith(dirs):
                return f"{frame.file_name}:{frame.line_num} ({frame.function_name})"
    return None


def _bind(eqn: JaxprEqn, invals: list) -> list:
    params = eqn.primitive.get_bind_params(eqn.params)  # a dict on newer jax, (subfuns, params) before
    subfuns, params = params if isinstance(params, tuple) else ([], params)
    out = eqn.primitive.bind(*subfuns, *invals, **params)
    return list(out) if eqn.primitive.multiple_results else [out]


def _sub(eqn: JaxprEqn) -> tuple[Jaxpr, list] | None:
    """The (jaxpr, consts) an equation calls with its own inputs, or None."""
    for key in _SUB:
        sub = eqn.params.get(key)
        if sub is None:
            continue
        if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):  # a ClosedJaxpr
            return sub.jaxpr, list(sub.consts)
        if hasattr(sub, "eqns") and not sub.constvars:
            return sub, []
    return None


def _step(eqn: JaxprEqn, invals: list) -> dict:
    name = eqn.params.get("name") if eqn.primitive.name in ("pjit", "jit", "closed_call") else None
    label = f"{eqn.primitive.name}({name})" if name else eqn.primitive.name
    return {"primitive": eqn.primitive.name, "label": label, "source": source_line(eqn), "eqn": eqn, "in": invals}


def _read(env: dict, v: Var | _Literal) -> ArrayLike:
    return v.val if isinstance(v, _Literal) else env[v]


def forward(jaxpr: Jaxpr, consts: list, args: list, depth: int = 0) -> list[dict]:
    """The chain of equations (outermost first) that first made ``jaxpr``'s outputs non-finite."""
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    origin: dict = {}  # var -> step that first made it non-finite
    for k, eqn in enumerate(jaxpr.eqns):
        invals = [_read(env, v) for v in eqn.invars]
        outvals = _bind(eqn, invals)
        bad = [v for v, x in zip(eqn.outvars, outvals) if nonfinite(x)]
        if bad:
            parents = [origin[v] for v in eqn.invars if not isinstance(v, _Literal) and v in origin]
            step = min(parents, key=lambda s: s["order"]) if parents else dict(_step(eqn, invals), order=k)
            for v in bad:
                origin[v] = step
        env.update(zip(eqn.outvars, outvals))
    found = [origin[v] for v in jaxpr.outvars if not isinstance(v, _Literal) and v in origin]
    if not found:
        return []
    step = min(found, key=lambda s: s["order"])
    sub = _sub(step["eqn"]) if depth < 8 else None
    inner = forward(sub[0], sub[1], step["in"], depth + 1) if sub else []
    return [step, *inner]


def _floating(v: Var) -> bool:
    return jnp.issubdtype(v.aval.dtype, jnp.inexact)  # pyright: ignore[reportAttributeAccessIssue] - a ShapedArray (stubs: AbstractValue)


def backward(jaxpr: Jaxpr, consts: list, args: list, out_cts: list, depth: int = 0) -> list[dict]:
    """The chain of equations (outermost first) whose cotangent rule first made a cotangent
    non-finite, walking back from ``out_cts`` (one per output of ``jaxpr``, None for zero)."""
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        env.update(zip(eqn.outvars, _bind(eqn, [_read(env, v) for v in eqn.invars])))
    cts: dict = {}

    def add(v: Var | _Literal, ct: jax.Array | None) -> None:
        if ct is not None and not isinstance(v, _Literal) and _floating(v):
            cts[v] = ct if v not in cts else cts[v] + ct

    for v, ct in zip(jaxpr.outvars, out_cts):
        add(v, ct)
    for eqn in reversed(jaxpr.eqns):
        outs = [i for i, v in enumerate(eqn.outvars) if _floating(v)]
        if not any(eqn.outvars[i] in cts for i in outs):
            continue
        invals = [_read(env, v) for v in eqn.invars]
        diff = [i for i, v in enumerate(eqn.invars) if not isinstance(v, _Literal) and is_float(invals[i])]
        if not diff:
            continue
        out_vars = [eqn.outvars[i] for i in outs]
        out_ct = [cts[v] if v in cts else jnp.zeros(v.aval.shape, v.aval.dtype) for v in out_vars]  # pyright: ignore[reportAttributeAccessIssue] - floating: a ShapedArray
        in_ct = jax.vjp(_local(eqn, invals, diff, outs), *[invals[i] for i in diff])[1](out_ct)
        if any(nonfinite(c) for c in in_ct) and not any(nonfinite(c) for c in out_ct):
            step = _step(eqn, invals)
            sub = _sub(eqn) if depth < 8 else None
            full_ct = [cts.get(v) if _floating(v) else None for v in eqn.outvars]
            inner = backward(sub[0], sub[1], invals, full_ct, depth + 1) if sub else []
            return [step, *inner]
        for i, c in zip(diff, in_ct):
            add(eqn.invars[i], c)
    return []


def _local(eqn: JaxprEqn, invals: list, diff: list, outs: list) -> Callable[..., list]:
    def f(*xs: jax.Array) -> list:
        vals = list(invals)
        for i, x in zip(diff, xs):
            vals[i] = x
        result = _bind(eqn, vals)
        return [result[i] for i in outs]

    return f


def call_jaxpr(call: Call) -> tuple[ClosedJaxpr, list, list[int]]:
    """The call as a closed jaxpr of its array leaves (state, args, kwargs), those leaves' values, and
    the indices, among the leaves of the call's output, of the arrays the jaxpr returns."""
    graphdef, state = call.state
    leaves, treedef = jax.tree.flatten((state, call.inputs))
    dyn = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, np.ndarray))]
    kept: list[int] = []

    def f(*values: jax.Array) -> list:
        ls = list(leaves)
        for i, v in zip(dyn, values):
            ls[i] = v
        st, (args, kwargs) = treedef.unflatten(ls)
        module = nnx.merge(graphdef, st)
        out = jax.tree.leaves(getattr(module, call.method)(*args, **kwargs))
        kept[:] = [i for i, x in enumerate(out) if isinstance(x, jax.Array)]
        return [out[i] for i in kept]

    values = [leaves[i] for i in dyn]
    closed = jax.make_jaxpr(f)(*values)
    return closed, values, list(kept)
