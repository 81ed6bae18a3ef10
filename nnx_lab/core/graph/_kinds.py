"""What a node of an NNX graph is, decided by its type where the type decides (flax's checks are
Python, asked per node: a walk of thousands of nodes asks once per type), and a node's child by key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Hashable, TypeGuard

import jax
from flax import nnx
from flax.nnx import graph as nnx_graph
from jax.core import Tracer

from ..fallbacks import slower

OTHER, VARIABLE, GRAPH_NODE = 0, 1, 2
_node_kinds: dict[type, int] = {}  # a type whose instances are all of one kind -> that kind


def node_kind(x: object) -> int:
    """Whether ``x`` is a Variable, a graph node flax names (not its per-Module bookkeeping) or neither."""
    t = type(x)
    kind = _node_kinds.get(t)
    if kind is None:
        if isinstance(x, nnx.Variable):
            kind = VARIABLE
        elif nnx_graph.is_graph_node(x) and not _bookkeeping(x):
            kind = GRAPH_NODE
        else:
            kind = OTHER
        if not issubclass(t, (jax.Array, Tracer)):  # an array ref, a traced Variable: by value
            _node_kinds[t] = kind
    return kind


def is_variable(x: object) -> TypeGuard[nnx.Variable]:
    """``isinstance(x, nnx.Variable)``, decided by type where the type decides (a walk asks per node)."""
    return node_kind(x) == VARIABLE


def child_of(parent: Any, key: Hashable) -> Any:
    """``parent``'s entry at ``key`` as flax names it (attribute, index or dict key), or None."""
    try:
        if isinstance(parent, nnx.State):  # its nested entries as flax walks them: plain dicts
            return parent.raw_mapping[key]
        if isinstance(parent, Mapping) or not isinstance(key, str):
            return parent[key]
        return getattr(parent, key)  # a Module's attribute, a namedtuple's field (optax states)
    except Exception as e:  # noqa: BLE001 - boundary: a user's __getitem__/property may raise anything
        slower("no entry %r in %s: flax's walk instead", key, type(parent).__name__, error=e)
        return None  # the caller steps aside (flax's own walk)


def _bookkeeping(node: object) -> bool:
    """flax's own per-Module record (``_pytree__state``), which holds no Variable."""
    return type(node).__name__ == "PytreeState" and type(node).__module__.startswith("flax.")
