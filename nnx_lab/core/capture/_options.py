"""What a :class:`~._capture.Capture` is asked for, checked before anything is armed: the model, the
type method outputs are kept as, whether ``only`` selects every module, and ``init``'s starting values
grouped by module."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from flax import nnx

from ..graph import Path, path_text
from ..text import a_kind

__all__ = ["check_model", "group_by_module", "method_type", "selects_all"]


def check_model(model: object) -> None:
    if not isinstance(model, nnx.Module):
        raise TypeError(f"expected an nnx.Module to capture from, got {type(model).__name__}")


def method_type(methods: object) -> type[nnx.Variable] | None:
    if methods is False or methods is None:
        return None
    if methods is True:
        return nnx.Intermediate
    if isinstance(methods, type) and issubclass(methods, nnx.Variable):
        return methods
    raise TypeError(f"methods={methods!r}: expected True/False or an nnx.Variable type")


def selects_all(only: object) -> bool:
    return only is ... or only is None or only is True


def group_by_module(init: nnx.State | dict | None) -> dict[Path, list[tuple[Hashable, Any, type]]]:
    """``init``'s values by module path: (key, value, Variable type) each."""
    if init is None:
        return {}
    out: dict[Path, list[tuple[Hashable, Any, type]]] = {}
    for path, var in nnx.to_flat_state(init if isinstance(init, nnx.State) else nnx.State(init)):
        if not isinstance(var, nnx.Variable):
            raise TypeError(f"init: {path_text(path)} is {a_kind(type(var).__name__)}, not a Variable")
        out.setdefault(tuple(path[:-1]), []).append((path[-1], var.get_value(), type(var)))
    return out
