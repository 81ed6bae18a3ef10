"""XLA's cost of the common primitives by formula: flops, transcendentals and bytes accessed of one
equation as XLA's unoptimized HLO cost analysis counts them (checked, exactly, against XLA's count of
each module call lowered alone in ``tests/summary/test_summary.py``); None for any other primitive
(``_costs.py`` then asks XLA about that equation alone)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["formula", "io_bytes", "nbytes"]

_ZERO = frozenset(
    {
        "broadcast_in_dim",
        "reshape",
        "transpose",
        "squeeze",
        "expand_dims",
        "slice",
        "dynamic_slice",
        "dynamic_update_slice",
        "concatenate",
        "pad",
        "iota",
        "copy",
        "copy_p",
        "rev",
        "gather",
        "device_put",
        "stop_gradient",
        "sharding_constraint",
        "mesh_cast",
        "reshard",
        "optimization_barrier",
        "random_wrap",
        "random_unwrap",
        "squeeze_p",
        "split",
        "pvary",
        "with_sharding_constraint",
        "name",
        "random_seed",
        "random_fold_in_p",
        "axis_index",
    }
)
_TRANSCENDENTAL = frozenset(
    {
        "exp",
        "exp2",
        "log",
        "log1p",
        "expm1",
        "tanh",
        "logistic",
        "sin",
        "cos",
        "tan",
        "sqrt",
        "rsqrt",
        "cbrt",
        "pow",
        "atan2",
        "erf",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
    }
)
_ELEMENTWISE = frozenset(
    {
        "add",
        "add_any",
        "sub",
        "mul",
        "div",
        "rem",
        "max",
        "min",
        "neg",
        "abs",
        "sign",
        "floor",
        "ceil",
        "round",
        "is_finite",
        "and",
        "or",
        "not",
        "xor",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "select_n",
        "nextafter",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
        "population_count",
        "square",
        "convert_element_type",
        "bitcast_convert_type",
        "clamp",
        "imag",
        "real",
        "conj",
        "complex",
    }
)
_REDUCE = frozenset(
    {
        "reduce_sum",
        "reduce_max",
        "reduce_min",
        "reduce_prod",
        "reduce_and",
        "reduce_or",
        "reduce_xor",
    }
)


# An equation or aval is Any here: jax's stubs type a Var's aval AbstractValue, which has no shape or dtype.
def _size(aval: object) -> int:
    return int(math.prod(getattr(aval, "shape", ()) or ()))


def nbytes(aval: Any) -> int:
    try:
        itemsize = np.dtype(aval.dtype).itemsize
    except TypeError:  # an extended dtype (a PRNG key): its own itemsize when it has one
        itemsize = getattr(aval.dtype, "itemsize", 0) or 0
    return _size(aval) * int(itemsize)


def io_bytes(eqn: Any) -> int:
    return sum(nbytes(v.aval) for v in eqn.invars) + sum(nbytes(v.aval) for v in eqn.outvars)


def formula(eqn: Any) -> tuple | None:
    """XLA's cost of ``eqn`` by formula, or None for a primitive without one."""
    name = eqn.primitive.name
    out = eqn.outvars[0].aval if eqn.outvars else None
    if name in _ZERO:
        return 0, 0, io_bytes(eqn)
    if name in _ELEMENTWISE:
        if name == "convert_element_type" and out is not None and eqn.invars[0].aval.dtype == out.dtype:
            return 0, 0, 0
        return _size(out), 0, io_bytes(eqn)
    if name in _TRANSCENDENTAL:
        return 0, _size(out), io_bytes(eqn)
    if name in _REDUCE:
        return _size(eqn.invars[0].aval) - _size(out), 0, io_bytes(eqn)
    if name == "dot_general":
        (lhs_contract, _), _ = eqn.params["dimension_numbers"]
        shape = eqn.invars[0].aval.shape
        return 2 * _size(out) * int(math.prod(shape[d] for d in lhs_contract)), 0, io_bytes(eqn)
    return None
