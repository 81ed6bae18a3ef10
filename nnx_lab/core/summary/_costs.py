"""FLOPs and bytes of a jaxpr, operation by operation, attributed to the module calls that ran them.

The numbers are XLA's unoptimized HLO cost analysis (what ``nnx.tabulate(compute_flops=True)`` reads
per module call), which is a sum over operations: so each equation is costed alone, by formula
(``_formulas``) or lowered alone (cached), and the costs are added up per call. Control flow as XLA
counts it, except that a ``scan`` body counts ``length`` times (XLA counts a while body once); a
``while`` of unknown trip count once; a ``cond`` by its costliest branch. Bytes accessed are operand
and result bytes before fusion.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from ..memo import Memo
from ._formulas import formula, io_bytes

if TYPE_CHECKING:  # jax.extend.core on jax 0.7 and 0.10 alike; read only by the checker
    from jax.extend.core import ClosedJaxpr, JaxprEqn

_log = logging.getLogger("nnx_lab")

#: the prefix of the named scope each marked module call runs in (``nnxlab.17``)
SCOPE_PREFIX = "nnxlab."

_CALL_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")

Cost = tuple  # (flops, transcendentals, bytes accessed)
# An equation or jaxpr is Any below: jax's stubs type a Var's aval AbstractValue (no shape, no dtype), and
# the jaxprs a primitive's params hold are open or closed.

#: primitives that generate random bits (jax.random's threefry hash): a Dropout's mask costs FLOPs
#: as XLA counts them, often more than the layer's arithmetic; rows say how many (``rng_flops``)
RANDOM_BITS = frozenset({"random_bits", "threefry2x32", "random_split", "random_fold_in"})
_cache: Memo = Memo(8192)  # an equation's signature -> its (flops, transcendentals, bytes)


def _freeze(x: object) -> Hashable:
    try:
        hash(x)
        return x
    except TypeError:
        if isinstance(x, (list, tuple)):
            return tuple(_freeze(v) for v in x)
        if isinstance(x, dict):
            return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
        return repr(x)


def _signature(eqn: Any) -> tuple:
    return (
        eqn.primitive.name,
        tuple((tuple(v.aval.shape), str(v.aval.dtype)) for v in eqn.invars),
        tuple(sorted((k, _freeze(v)) for k, v in eqn.params.items())),
    )


def lowered_cost(eqn: Any) -> Cost:
    """XLA's cost analysis of ``eqn`` lowered alone (cached by primitive, shapes and parameters)."""
    import jax

    key = _signature(eqn)
    if key not in _cache:

        def one(*xs: jax.Array) -> object:
            return eqn.primitive.bind(*xs, **eqn.params)

        args = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
        cost = jax.jit(one).lower(*args).cost_analysis() or {}
        _log.debug("nnx_lab.summary: XLA costs %s alone", key[0])
        _cache[key] = (
            int(cost.get("flops", 0)),
            int(cost.get("transcendentals", 0)),
            int(cost.get("bytes accessed", 0)),
        )
    return _cache[key]


class Tally:
    """Costs per module call id, inclusive of the calls inside it, plus where each call first ran."""

    def __init__(self) -> None:
        self.flops: dict = {}
        self.transcendentals: dict = {}
        self.bytes: dict = {}
        self.trips: dict = {}  # call id -> how many times its body ran (scan lengths around it)
        self.total = [0, 0, 0]
        self.rng_flops: dict = {}  # call id -> its FLOPs that generate random bits (RANDOM_BITS), inclusive
        self.uncosted: dict = {}  # primitive name -> count of equations XLA could not cost
        self.primitives: set = set()

    def add(self, scopes: tuple, mult: int, cost: Cost) -> None:
        flops, trans, nbytes = (c * mult for c in cost)
        self.total[0] += flops
        self.total[1] += trans
        self.total[2] += nbytes
        for call in set(scopes):
            self.flops[call] = self.flops.get(call, 0) + flops
            self.transcendentals[call] = self.transcendentals.get(call, 0) + trans
            self.bytes[call] = self.bytes.get(call, 0) + nbytes


def _scopes(eqn: JaxprEqn) -> tuple:
    """The marked calls in ``eqn``'s name stack, outermost first (relative to its enclosing jaxpr)."""
    out = []
    for item in getattr(eqn.source_info.name_stack, "stack", ()):
        name = getattr(item, "name", "")
        if type(item).__name__ == "Scope" and name.startswith(SCOPE_PREFIX):
            try:
                out.append(int(name[len(SCOPE_PREFIX) :]))
            except ValueError:
                continue  # a user's own scope that happens to share the prefix
    return tuple(out)


def _open(jaxpr: Any) -> Any:
    return getattr(jaxpr, "jaxpr", jaxpr)


def walk(jaxpr: Any, tally: Tally, cost_of: Callable[[Any], Cost], scopes: tuple = (), mult: int = 1) -> None:
    """Add every equation of ``jaxpr`` (and of the jaxprs inside it) to ``tally``."""
    for eqn in _open(jaxpr).eqns:
        here = scopes + _scopes(eqn)
        for call in here:
            tally.trips.setdefault(call, mult)
        params, name = eqn.params, eqn.primitive.name
        if name == "scan":
            walk(params["jaxpr"], tally, cost_of, here, mult * int(params["length"]))
            tally.add(here, mult, (2, 0, 0))  # the loop's counter: one add, one compare (as XLA counts)
        elif name == "while":
            walk(params["cond_jaxpr"], tally, cost_of, here, mult)
            walk(params["body_jaxpr"], tally, cost_of, here, mult)
        elif name == "cond":
            branches = []
            for branch in params["branches"]:
                sub = Tally()
                walk(branch, sub, cost_of, (), 1)
                branches.append(sub.total)
            tally.add(here, mult, tuple(max(branches)) if branches else (0, 0, 0))
        elif any(k in params and hasattr(_open(params[k]), "eqns") for k in _CALL_PARAMS):
            key = next(k for k in _CALL_PARAMS if k in params and hasattr(_open(params[k]), "eqns"))
            walk(params[key], tally, cost_of, here, mult)
        else:
            tally.primitives.add(name)
            try:
                cost = cost_of(eqn)
            except Exception as e:  # noqa: BLE001 - a primitive XLA cannot lower alone: counted as uncosted, said in the header
                _log.debug("nnx_lab.summary: no cost for %s: %s", name, e)
                tally.uncosted[name] = tally.uncosted.get(name, 0) + 1
                cost = (0, 0, io_bytes(eqn))
            tally.add(here, mult, cost)
            if name in RANDOM_BITS and cost[0]:
                for call in set(here):
                    tally.rng_flops[call] = tally.rng_flops.get(call, 0) + cost[0] * mult


def eqn_cost(eqn: Any) -> Cost:
    """An equation's cost: the formula when there is one, else XLA's analysis of it alone."""
    cost = formula(eqn)
    return cost if cost is not None else lowered_cost(eqn)


def tally(jaxpr: ClosedJaxpr) -> Tally:
    """The costs of ``jaxpr`` per marked call."""
    from jax._src.interpreters import partial_eval as pe

    out = Tally()
    # What the outputs need, as jit runs it (and as tabulate's lowering counts): an update nobody
    # returns (a BatchNorm's running statistics, an RNG count) is dropped.
    open_jaxpr = _open(jaxpr)
    open_jaxpr, _ = pe.dce_jaxpr(open_jaxpr, [True] * len(open_jaxpr.outvars))
    walk(open_jaxpr, out, eqn_cost)
    return out
