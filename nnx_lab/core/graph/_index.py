"""Every Module and every Variable of a graph once, at flax's path for it: what a summary needs of a
model (which module owns which parameters), in one walk: jax's flattening where it provably agrees
with flax's ``nnx.iter_graph`` (as ``_walk._flat_walk``), else flax's.

>>> from flax import nnx
>>> class Net(nnx.Module):
...     def __init__(self, rngs):
...         self.linear = nnx.Linear(2, 3, rngs=rngs)
>>> index = index_graph(Net(nnx.Rngs(0)))
>>> sorted(index.modules), sorted(index.variables)
([(), ('linear',)], [('linear', 'bias'), ('linear', 'kernel')])
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flax import nnx

from .. import compat
from ..fallbacks import slower
from ._flatten import SharedNode, TooDeep, flatten
from ._kinds import GRAPH_NODE, VARIABLE, child_of, node_kind
from ._paths import Path, path_key


@dataclasses.dataclass(frozen=True)
class GraphIndex:
    """path -> object for each Module (the root's path is ``()``) and each Variable, each at its first
    path in flax's walk. The order of the entries carries no meaning."""

    modules: dict[Path, nnx.Module]
    variables: dict[Path, nnx.Variable]


def index_graph(obj: Any) -> GraphIndex:
    """The Modules and Variables of ``obj`` (a Module or any graph flax walks)."""
    fast = _flat_index(obj)
    return fast if fast is not None else _flax_index(obj)


def _flax_index(obj: Any) -> GraphIndex:
    modules: dict[Path, nnx.Module] = {}
    variables: dict[Path, nnx.Variable] = {}
    for path, value in compat.iter_graph(obj):  # each node once, at its first path
        if isinstance(value, nnx.Variable):
            variables[tuple(path)] = value
        elif isinstance(value, nnx.Module):
            modules[tuple(path)] = value
    return GraphIndex(modules, variables)


def _flat_index(obj: Any) -> GraphIndex | None:
    """The index from jax's flattening, or None where it might differ from flax's walk (see above)."""
    seen: list[tuple[tuple, Any, int]] = []  # (jax key path, node, kind): every node jax passes through

    def is_leaf(keys: tuple, x: object) -> bool:
        kind = node_kind(x)
        seen.append((keys, x, kind))
        return kind == VARIABLE

    try:
        flat, _ = flatten(obj, is_leaf, shared=False, leaf_takes_path=True)
    except (SharedNode, TooDeep):  # a tied or shared node, a cycle, a deep graph: flax's walk names them
        return None
    except Exception as e:  # noqa: BLE001 - boundary: a user's pytree flatten function raised; flax's walk says
        slower("jax could not flatten %s: flax's walk instead", type(obj).__name__, error=e)
        return None
    if any(node_kind(x) == GRAPH_NODE for x in flat):
        return None  # a graph node jax does not walk into (a pytree=False Module, any Module on flax 0.11)
    objects: dict[Path, object] = {}
    modules: dict[Path, nnx.Module] = {}
    variables: dict[Path, nnx.Variable] = {}
    reached: set[int] = set()
    for keys, x, kind in seen:
        path = tuple(map(path_key, keys))
        if path and (path[:-1] not in objects or child_of(objects[path[:-1]], path[-1]) is not x):
            return None  # jax's key is not flax's (or the parent was not stepped to): flax walks it
        objects[path] = x
        if kind == VARIABLE:
            if id(x) in reached:  # a tied Variable (jax does not see it is shared): flax names its path
                return None
            reached.add(id(x))
            variables[path] = x
        elif kind == GRAPH_NODE and isinstance(x, nnx.Module):
            modules[path] = x
    return GraphIndex(modules, variables)
