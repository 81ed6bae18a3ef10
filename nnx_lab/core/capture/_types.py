"""Which Variable types a capture collects: names and classes resolved to ``nnx.Variable`` types."""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import TYPE_CHECKING, Sequence, TypeAlias

from flax import nnx

from ..shell import shell_namespace
from ..text import a_kind

#: What a capture collects unless told otherwise.
DEFAULT_TYPES: tuple[type[nnx.Variable], ...] = (nnx.Intermediate,)

_MISSING = object()

if TYPE_CHECKING:
    #: A ``types=`` argument (:func:`resolve_types`): a Variable type, a name, or a collection of them.
    TypesSpec: TypeAlias = type[nnx.Variable] | str | Collection[type[nnx.Variable] | str] | None


# --------------------------------------------------------------------------- Variable types


def resolve_types(spec: TypesSpec, namespace: dict | None = None) -> tuple[type[nnx.Variable], ...]:
    """The Variable types named by ``spec``, in order, without repeats.

    ``spec``: a Variable subclass; a name (``"Intermediate"``, ``"nnx.Perturbation"``, a Linen
    collection name such as ``"intermediates"``, or a name bound in ``namespace`` such as your
    own ``"MyInterm"``); a comma-separated string of those; or a sequence of any of them.
    ``None`` means :data:`DEFAULT_TYPES`. Raises a one-line ``ValueError`` for an unknown name
    and ``TypeError`` for anything that is not a Variable type.

    >>> resolve_types("Intermediate, nnx.Perturbation")
    (<class 'flax.nnx.variablelib.Intermediate'>, <class 'flax.nnx.variablelib.Perturbation'>)
    >>> resolve_types("Linear")
    Traceback (most recent call last):
    TypeError: 'Linear' is a type, not an nnx.Variable type
    """
    if spec is None:
        return DEFAULT_TYPES
    found: list[type[nnx.Variable]] = []
    for item in _items(spec):
        t = _resolve_one(item, namespace or {})
        if t not in found:
            found.append(t)
    if not found:
        raise ValueError("no Variable type given")
    return tuple(found)


def _items(spec: object) -> Sequence[type | str]:
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")]
        if any(not p for p in parts):
            raise ValueError(f"empty name in the type list {spec!r}")
        return parts
    if isinstance(spec, type):
        return [spec]
    if isinstance(spec, (list, tuple, set, frozenset)):
        return [x for item in spec for x in _items(item)]
    raise TypeError(f"{spec!r} is {a_kind(type(spec).__name__)}, not an nnx.Variable type")


def _resolve_one(item: type | str, namespace: dict) -> type[nnx.Variable]:
    if isinstance(item, type):
        if issubclass(item, nnx.Variable):
            return item
        raise TypeError(f"{item.__name__} is not an nnx.Variable type")
    name = item
    obj: object = _MISSING
    short = name.removeprefix("flax.nnx.") if name.startswith("flax.nnx.") else name.removeprefix("nnx.")
    if short.isidentifier() and isinstance(getattr(nnx, short, None), type):
        obj = getattr(nnx, short)
    if obj is _MISSING:
        head, *rest = name.split(".")
        if head in namespace:
            obj = namespace[head]
            for attr in rest:
                obj = getattr(obj, attr, _MISSING)
                if obj is _MISSING:
                    break
    if obj is _MISSING:
        try:  # a Linen collection name: "intermediates", "perturbations", ...
            obj = nnx.variablelib.variable_type_from_name(name)
        except ValueError:
            pass
    if obj is _MISSING:
        raise ValueError(
            f"unknown Variable type {name!r}: not in flax.nnx, not a registered collection "
            "name, not defined in this namespace"
        )
    if isinstance(obj, type) and issubclass(obj, nnx.Variable):
        return obj
    kind = "type" if isinstance(obj, type) else type(obj).__name__
    raise TypeError(f"{name!r} is {a_kind(kind)}, not an nnx.Variable type")


def type_names(types: Sequence[type]) -> list[str]:
    return [t.__name__ for t in types]


def caller_namespace(depth: int, spec: object) -> dict:
    """Names a type given as text may refer to: the calling frame's (locals over globals), then the
    IPython user namespace. Empty when ``spec`` names no type as text: reading a function's
    ``f_locals`` leaves a copy of its locals on the frame (Python < 3.13), which would keep
    a deleted model alive until that function returns."""
    if not (isinstance(spec, str) or isinstance(spec, (list, tuple)) and any(isinstance(i, str) for i in spec)):
        return {}
    names: dict = {}
    names.update(shell_namespace() or {})
    frame = sys._getframe(depth + 1)
    names.update(frame.f_globals)
    names.update(frame.f_locals)
    del frame
    return names
