"""Who holds what: the namespace's names (and IPython's output cache) walked to the jax arrays each
reaches, each grouped by Variable type, optimizer state entry or ``array`` (docs/guide/memory.md).
"""

from __future__ import annotations

import logging
import re
import types
from dataclasses import dataclass, field
from typing import Any, Iterator

import jax
from flax import nnx
from flax.nnx import graph as nnx_graph

from .. import compat
from ..graph import flatten

_log = logging.getLogger("nnx_lab")

# IPython's own names in user_ns: input history, directory history, the shell's helpers.
_SKIP = re.compile(r"^(In|_ih|_dh|_sh|_oh|Out|exit|quit|get_ipython|_i+|_i\d+|__\w*__)$")
# The output cache's names: `_`, `__`, `___`, `_12`.
_OUTPUT_NAME = re.compile(r"^(_{1,3}|_\d+)$")

MODULE, OPTIMIZER, NNX_OBJECT, PYTREE, OBJECT, ARRAY, OUTPUT, UNREACHED = (
    "module",
    "optimizer",
    "nnx object",
    "pytree",
    "object",
    "array",
    "output cache",
    "unreached",
)


@dataclass
class Holder:
    """One holder: its display name, kind, the statement that drops it, and the arrays it reaches
    as ``(group, array)`` pairs (filled by :func:`holders`)."""

    name: str
    kind: str
    statement: str
    aliases: tuple[str, ...] = ()
    arrays: list[tuple[str, jax.Array]] = field(default_factory=list)


def holders(namespace: dict) -> list[Holder]:
    """The namespace's holders in order: user names first (so a buffer is listed under the name the
    user gave it), then the output cache (``Out[n]`` oldest first, then ``_``/``__``/``___``/``_N``
    that ``Out`` no longer holds)."""
    found: list[Holder] = []
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or _SKIP.match(name) or _OUTPUT_NAME.match(name) or _skipped(value):
            continue
        holder = Holder(name, _kind(value), f"del {name}" if name.isidentifier() else f"del globals()[{name!r}]")
        holder.arrays = list(reached(value))
        if holder.arrays:
            found.append(holder)
    found.extend(_output_cache(namespace))
    return found


def _skipped(value: object) -> bool:
    return isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, str, bytes))


def _output_cache(namespace: dict) -> Iterator[Holder]:
    out = namespace.get("Out", namespace.get("_oh"))
    out = out if isinstance(out, dict) else {}
    recent = {n: namespace.get(n) for n in ("_", "__", "___") if n in namespace}
    seen: set[int] = set()
    for n, value in list(out.items()):
        if id(value) in seen or _skipped(value):
            continue
        arrays = list(reached(value))
        seen.add(id(value))
        if not arrays:
            continue
        aliases = [f"_{n}"] if namespace.get(f"_{n}") is value else []
        aliases += [k for k, v in recent.items() if v is value]
        if aliases:  # IPython keeps more references than user_ns shows (its hidden namespace, the display
            # hook's `_`/`__`/`___`): `del _3` or `%reset -f out` leave them; %xdel drops every one
            statement = f"%xdel {aliases[0]}"
        else:
            statement = f"Out.pop({n!r}, None)"
        yield Holder(f"Out[{n!r}]", OUTPUT, statement, tuple(aliases), arrays)
    for name, value in list(namespace.items()):
        if isinstance(name, str) and _OUTPUT_NAME.match(name) and id(value) not in seen and not _skipped(value):
            seen.add(id(value))
            arrays = list(reached(value))
            if arrays:
                statement = f"%xdel {name}"
                yield Holder(name, OUTPUT, statement, (), arrays)


def _kind(value: object) -> str:
    if isinstance(value, nnx.Module):
        return MODULE
    if isinstance(value, nnx.Optimizer):
        return OPTIMIZER
    if nnx_graph.is_graph_node(value):
        return NNX_OBJECT
    if isinstance(value, jax.Array):
        return ARRAY
    return OBJECT if _attributes(value) is not None else PYTREE


ARRAY_T, VARIABLE_T, GRAPH_T, OTHER_T = range(4)
_CLASSES: dict[type, int] = {}  # flax's isinstance checks cost µs each: one per type


def _classify(x: object) -> int:
    t = type(x)
    c = _CLASSES.get(t)
    if c is None:
        if isinstance(x, jax.Array):
            c = ARRAY_T
        elif isinstance(x, nnx.Variable):
            c = VARIABLE_T
        elif nnx_graph.is_graph_node(x):
            c = GRAPH_T
        else:
            c = OTHER_T
        _CLASSES[t] = c
    return c


def _is_node(x: object) -> bool:
    return _classify(x) in (VARIABLE_T, GRAPH_T)


def _attributes(value: object) -> list | None:
    """The attribute values of an object that is no pytree (a sampler, a trainer, nnx_lab's
    ``Capture``, a dataclass jax does not flatten), else None."""
    if _classify(value) != OTHER_T or isinstance(value, (list, tuple, dict)) or _skipped(value):
        return None
    try:
        attrs = vars(value)
    except TypeError:  # no __dict__ (a number, a slotted object)
        return None
    if not isinstance(attrs, dict) or not attrs:
        return None
    try:
        if flatten(value)[0] != [value]:  # a registered pytree: walked as one
            return None
    except Exception as e:  # noqa: BLE001 - jax refuses it: read its attributes
        _log.debug(
            "nnx_lab.memory: %s is no pytree jax flattens (%s): its attributes are read", type(value).__name__, e
        )
    # A namespace an object keeps (a widget's shell, a module's globals) is not what it holds: walked,
    # it would reach every name's arrays.
    return [v for v in attrs.values() if not _is_namespace(v)]


def _is_namespace(value: object) -> bool:
    return isinstance(value, dict) and ("__builtins__" in value or "_ih" in value or "__name__" in value)


def reached(value: Any, _depth: int = 0) -> Iterator[tuple[str, jax.Array]]:
    """``(group, array)`` for every jax array ``value`` reaches (arrays twice reached: twice); an
    object that is no pytree is read through its attributes, one level deep (``sampler.transformer``,
    ``cap.captured``), as a name's own attributes are what ``del name`` frees."""
    if _depth == 0:
        attrs = _attributes(value)
        if attrs is not None:
            for attr in attrs:
                yield from reached(attr, 1)
            return
    c = _classify(value)
    if c == ARRAY_T:
        yield "array", value
        return
    if c == GRAPH_T:
        yield from _graph_arrays(value)
        return
    try:  # graph.flatten: jax's walk, safe from a self-referencing list (jax's recursion guard)
        leaves = flatten(value, _is_node)[0]
    except Exception as e:  # noqa: BLE001 - a cycle, a broken pytree: it holds nothing we can see
        _log.debug("nnx_lab.memory: a value could not be walked (%s)", e)
        return
    for leaf in leaves:
        c = _classify(leaf)
        if c == ARRAY_T:
            yield "array", leaf
        elif c == VARIABLE_T:
            yield from _variable_arrays(compat.variable_type(leaf).__name__, compat.get_value(leaf))
        elif c == GRAPH_T:
            yield from _graph_arrays(leaf)


def _is_variable(x: object) -> bool:
    return _classify(x) == VARIABLE_T


def _graph_arrays(node: object) -> Iterator[tuple[str, jax.Array]]:
    optimizer = isinstance(node, nnx.Optimizer)
    if not optimizer:  # jax's flattening of a module (one C++ walk); flax's walk where it refuses (a cycle)
        try:
            leaves = flatten(node, _is_variable)[0]
        except Exception as e:  # noqa: BLE001 - a cycle or a node jax does not flatten: flax's walk below
            _log.debug("nnx_lab.memory: flax's walk for %s (%s)", type(node).__name__, e)
        else:
            for leaf in leaves:
                c = _classify(leaf)
                if c == VARIABLE_T:
                    yield from _variable_arrays(compat.variable_type(leaf).__name__, compat.get_value(leaf))
                elif c == ARRAY_T:
                    yield "array", leaf
            return
    for path, value in compat.iter_graph(node):
        c = _classify(value)
        if c == VARIABLE_T:
            group = _optimizer_group(path) if optimizer else compat.variable_type(value).__name__
            yield from _variable_arrays(group, compat.get_value(value))
        elif c == ARRAY_T:  # an array attribute of a Pytree (flax >= 0.12 data fields)
            yield "array", value


def _variable_arrays(group: str, value: Any) -> Iterator[tuple[str, jax.Array]]:
    if _classify(value) == ARRAY_T:
        yield group, value
        return
    try:
        leaves = flatten(value)[0]
    except Exception:  # noqa: BLE001 - a value jax cannot walk holds nothing we can see
        return
    for leaf in leaves:
        if _classify(leaf) == ARRAY_T:
            yield group, leaf


def _optimizer_group(path: tuple) -> str:
    """``('opt_state', 0, 'mu', 'kernel')`` -> ``'mu'``; ``('step',)`` -> ``'step'``."""
    keys = [str(k) for k in path if isinstance(k, str)]
    if keys and keys[0] == "opt_state":
        keys = keys[1:]
    return keys[0] if keys else "state"
