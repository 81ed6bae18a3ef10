"""The Python names a split's States are bound to by default."""

from __future__ import annotations

import re
from typing import Any, Sequence

from flax.nnx import filterlib

from ..._ipython.names import check_name

__all__ = ["default_names"]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _name_of(f: Any) -> str | None:
    if f is ... or f is True:
        return "rest"
    if f is None or f is False:
        return "nothing"
    if isinstance(f, type):
        return _snake(f.__name__)
    if isinstance(f, str):
        return f
    if isinstance(f, filterlib.OfType):
        return _name_of(f.type)
    if isinstance(f, filterlib.WithTag):
        return _name_of(f.tag)
    if isinstance(f, filterlib.PathContains):
        return _name_of(str(f.key))
    if isinstance(f, filterlib.Not):
        inner = _name_of(f.predicate)
        return f"not_{inner}" if inner else None
    if isinstance(f, (tuple, filterlib.Any, filterlib.All)):
        parts = [_name_of(p) for p in (f if isinstance(f, tuple) else f.predicates)]
        named = [p for p in parts if p]
        joiner = "_and_" if isinstance(f, filterlib.All) else "_or_"
        return joiner.join(named) if len(named) == len(parts) else None
    name = getattr(f, "__name__", None)
    return None if name == "<lambda>" else name


def _bindable(name: str) -> bool:
    try:
        check_name(name)
    except ValueError:
        return False
    return True


def default_names(filters: Sequence[Any]) -> list[str]:
    """Python names for the States of a split: ``param``, ``batch_stat``, ``rest`` for ``...``.

    >>> from flax import nnx
    >>> default_names([nnx.Param, nnx.BatchStat, ...])
    ['param', 'batch_stat', 'rest']
    >>> default_names(["params", nnx.PathContains("lora"), lambda p, v: True, (nnx.Param, nnx.BatchStat)])
    ['params', 'lora', 'filter3', 'param_or_batch_stat']
    """
    names: list[str] = []
    for i, f in enumerate(filters):
        name = _name_of(f)
        if not name or not _bindable(name) or name in names or name == "graphdef":
            name = f"filter{i + 1}"
        names.append(name)
    return names
