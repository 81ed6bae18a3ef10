"""Nodes reachable by more than one path (tied weights, a shared Module, a reference cycle): flax's
canonical path for each, and the other paths a leaf under it is also reachable by (its aliases)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flax import nnx
from flax.nnx import graph as nnx_graph

from ._paths import Path

_log = logging.getLogger("nnx_lab")


def shared_prefixes(obj: Any, seen: set[Path]) -> list[tuple[Path, list[Path]]]:
    """(the path iter_graph used, the other paths) for each node reachable more than once: a tied
    module, or an enclosing node a reference cycle leads back to (``seen``: iter_graph's paths)."""
    if not (nnx_graph.is_graph_node(obj) or isinstance(obj, (Mapping, list, tuple))):
        return []
    try:  # plain dicts and lists too: {'a': {'b': m}, 'c': m} shares m
        duplicates = nnx.find_duplicates(obj)
    except RecursionError:
        raise  # a graph too deep for flax's walk: the aliases are unknown, not absent
    except Exception as e:  # noqa: BLE001 - boundary: flax walking a user's container; none it cannot walk has aliases
        _log.debug("nnx_lab: nnx.find_duplicates(%s) raised %s: no aliases", type(obj).__name__, e)
        return []
    groups = []
    for group in duplicates:
        paths = [tuple(p) for p in group]
        canonical = next((p for p in paths if p in seen), paths[0])
        groups.append((canonical, [p for p in paths if p != canonical]))
    return groups


def aliases_at(path: Path, shared: list[tuple[Path, list[Path]]]) -> tuple[Path, ...]:
    """The other paths of the node at ``path`` (``shared``: from :func:`shared_prefixes`)."""
    found: list[Path] = []
    for canonical, others in shared:
        if path[: len(canonical)] == canonical:
            suffix = path[len(canonical) :]
            found.extend(other + suffix for other in others)
    return tuple(found)
