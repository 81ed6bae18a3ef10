"""A ``set_view`` method read as data: its signature's text, each argument's annotation (unions written
``A | B | None`` however they were written), default, help text (parsed as ``nnx.view_info`` does) and
kind, and the simple types a value is checked against."""

from __future__ import annotations

import ast
import functools
import inspect
import logging
import types
import typing
from typing import Any, Callable

from ..text import safe_repr

_log = logging.getLogger("nnx_lab")

__all__ = ["CHECKS", "WANTED", "set_view_params", "simple_types"]


@functools.lru_cache(maxsize=512)
def set_view_params(method: Any) -> tuple[str, tuple[tuple[str, str, Any, str, str], ...]]:
    """Per ``set_view`` function (so per class, not per instance): its signature text and
    (name, annotation, default, doc, kind) of each argument."""
    signature = inspect.signature(method)
    docs = _arg_docs(method)
    params = []
    for name, param in signature.parameters.items():
        if name in ("self", "args", "kwargs") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = "" if param.annotation is param.empty else _annotation_text(param.annotation)
        default = None if param.default is param.empty else param.default
        params.append((name, annotation, default, docs.get(name, ""), _kind(annotation)))
    try:
        text = f"set_view{signature}"
    except Exception:  # noqa: BLE001 - boundary: a user's annotation or default whose repr raises
        _log.debug("nnx_lab: set_view's signature has no text", exc_info=True)
        text = f"set_view({', '.join(signature.parameters)})"
    return text, tuple(params)


def _arg_docs(method: Any) -> dict[str, str]:
    """The `Args:` section of a set_view docstring, parsed the way nnx.view_info parses it."""
    doc = inspect.getdoc(method)
    if not isinstance(doc, str) or "Args:\n" not in doc:
        return {}
    from flax.nnx.module import _parse_docstring_args  # view_info's own parser (flax>=0.12.4)

    start, end = doc.find("Args:\n"), doc.find("Returns:\n")
    section = doc[start + 6 : end if end != -1 else len(doc)]
    try:
        return {k: " ".join(v.split()) for k, v in _parse_docstring_args(section).items()}
    except Exception:  # noqa: BLE001 - boundary: a user's docstring flax's parser cannot read: no help text
        _log.debug("nnx_lab: set_view's Args section not parsed", exc_info=True)
        return {}


def _annotation_text(annotation: Any) -> str:
    """An annotation as text, with unions written ``A | B | None`` whether they were written
    ``Optional[A]``, ``typing.Union[A, None]`` or ``A | None``, at run time or as a string."""
    return " | ".join(dict.fromkeys(_union_parts(annotation)))


def _union_parts(annotation: Any) -> list[str]:
    if isinstance(annotation, str):
        try:
            return _text_parts(ast.parse(annotation.strip(), mode="eval").body)
        except SyntaxError:
            return [annotation.strip()]
    if annotation is None or annotation is type(None):
        return ["None"]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [part for arg in typing.get_args(annotation) for part in _union_parts(arg)]
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return [annotation.__name__]
    return [safe_repr(annotation, 200).replace("typing.", "")]


def _text_parts(node: ast.expr) -> list[str]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _text_parts(node.left) + _text_parts(node.right)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional" and len(args) == 1:
            return _text_parts(args[0]) + ["None"]
        if head == "Union":
            return [part for arg in args for part in _text_parts(arg)]
    if isinstance(node, ast.Constant) and node.value is None:
        return ["None"]
    return [ast.unparse(node)]


#: Annotations whose values are checked; a union with anything else is passed on unchecked.
CHECKS: dict[str, Callable[[Any], bool]] = {
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),  # an int is a float here
    "str": lambda v: isinstance(v, str),
    "None": lambda v: v is None,
    "tuple": lambda v: isinstance(v, tuple),
    "list": lambda v: isinstance(v, list),
}
WANTED = {"int": "an int", "float": "a float", "str": "a str", "tuple": "a tuple", "list": "a list"}


@functools.lru_cache(maxsize=512)
def simple_types(annotation: str) -> frozenset[str] | None:
    parts = set()
    for part in annotation.split(" | ") if annotation else ():
        head = part.split("[", 1)[0].strip()  # tuple[int, int] is a tuple
        head = {"Tuple": "tuple", "List": "list", "NoneType": "None"}.get(head, head)
        if head not in CHECKS:
            return None
        parts.add(head)
    return frozenset(parts) or None


def _kind(annotation: str) -> str:
    parts = simple_types(annotation) or frozenset()
    if parts == {"bool", "None"}:
        return "tri_bool"
    if parts == {"bool"}:
        return "bool"
    if parts in ({"int"}, {"int", "None"}):
        return "int"
    return "literal"
