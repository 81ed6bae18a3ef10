"""NNX filters as Python text, so the line a panel shows is the line that runs: classes
(``nnx.Dropout``, a user class bound in the notebook, else an exact-type test), flax's filter
objects, functions by the name bound to them, and module paths as prefix lambdas. The same text
labels a split's filters (``label=True``: a class by its name, a filter with no text by its repr).

>>> from flax import nnx
>>> filter_code(nnx.All(nnx.Dropout, nnx.Not(nnx.BatchNorm)))
'nnx.All(nnx.Dropout, nnx.Not(nnx.BatchNorm))'
"""

from __future__ import annotations

from typing import Mapping

from flax import nnx
from flax.nnx import filterlib

from ..graph import Path
from ..text import ECHO_CHARS, safe_repr

#: What the line shows for a filter that has no Python text (a function not bound to any name).
UNNAMED = "<your filter>"


def class_code(cls: type, namespace: Mapping[str, object] | None = None, label: bool = False) -> str:
    """Python text naming ``cls``: ``nnx.Dropout``, a user class bound under its own name (or any,
    for a ``label``), or an exact-type test when neither reaches it."""
    name = cls.__name__
    if getattr(nnx, name, None) is cls:
        return f"nnx.{name}"
    if label or (namespace is not None and namespace.get(name) is cls):
        return name
    return f"lambda path, node: type(node).__name__ == {name!r}"


def filter_code(only: object, namespace: Mapping[str, object] | None = None, label: bool = False) -> str | None:
    """An NNX filter as Python text that builds it (``nnx.All(nnx.Dropout, nnx.PathContains('enc'))``),
    a name of the namespace bound to it, or None when it has neither (a lambda made in place). A
    ``label`` is never None: a class reads as its name, a filter with no text as its repr.

    >>> filter_code((nnx.Param, "lora", ...)), filter_code(lambda p, v: True), filter_code(len, label=True)
    ("(nnx.Param, 'lora', ...)", None, '<built-in function len>')
    """
    if only is ...:
        return "..."
    if isinstance(only, type):
        return class_code(only, namespace, label)
    if isinstance(only, (bool, str)):
        return repr(only)
    if isinstance(only, (tuple, list)):
        parts = [filter_code(f, namespace, label) for f in only]
        known = [p for p in parts if p is not None]
        if len(known) == len(parts):
            parts = known
            return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    elif isinstance(only, filterlib.OfType):
        return filter_code(only.type, namespace, label)
    elif isinstance(only, nnx.PathContains):
        exact = getattr(only, "exact", None)  # flax < 0.12 has no `exact` (its PathContains matches exactly)
        return (
            f"nnx.PathContains({only.key!r})" if exact is None else f"nnx.PathContains({only.key!r}, exact={exact!r})"
        )
    elif isinstance(only, nnx.WithTag):
        return f"nnx.WithTag({only.tag!r})"
    elif isinstance(only, (nnx.Everything, nnx.Nothing)):
        return f"nnx.{type(only).__name__}()"
    elif isinstance(only, (nnx.All, nnx.Any, nnx.Not)):
        inner = only.predicates if isinstance(only, (nnx.All, nnx.Any)) else (only.predicate,)
        parts = [filter_code(f, namespace, label) for f in inner]
        known = [p for p in parts if p is not None]
        if len(known) == len(parts):
            parts = known
            return f"nnx.{type(only).__name__}({', '.join(parts)})"
    if label:
        text = safe_repr(only, ECHO_CHARS)
        own = type(only).__module__ == filterlib.__name__ and getattr(nnx, type(only).__name__, None) is type(only)
        return f"nnx.{text}" if own else text  # flax's other filter objects (nnx.PathIn(...))
    if namespace is not None:
        return next((k for k, v in namespace.items() if v is only and not k.startswith("_")), None)
    return None


def path_code(path: Path) -> str:
    return f"lambda path, node: path == {tuple(path)!r}"


def roots_code(roots: tuple[Path, ...]) -> str:
    if len(roots) == 1:
        return f"lambda path, node: path[:{len(roots[0])}] == {roots[0]!r}"
    return f"lambda path, node: any(path[:len(r)] == r for r in {roots!r})"
