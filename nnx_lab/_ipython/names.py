"""Which names nnx_lab may bind in IPython's user namespace (``--as``, a view's name).

>>> check_name("__builtins__")
Traceback (most recent call last):
...
ValueError: --as '__builtins__': names starting with __ belong to Python and IPython; choose another name
"""

from __future__ import annotations

import builtins
import keyword
from typing import Any, Mapping

from ..core.text import clip, safe_repr

# Names IPython keeps in the user namespace itself; rebinding one breaks the shell.
_IPYTHON_NAMES = frozenset({"get_ipython", "In", "Out", "exit", "quit", "_", "__", "___", "_dh", "_ih", "_oh", "_sh"})


def check_name(
    name: object,
    *,
    what: str = "--as",
    namespace: Mapping[str, Any] | None = None,
    target: object = None,
    target_text: str | None = None,
) -> str:
    """``name`` if nnx_lab may bind it in the user namespace; otherwise ValueError saying why.

    Refused: non-identifiers, keywords, builtins, IPython's own names (``In``, ``Out``, ``_``,
    ``_i1``, ``_oh``, ``get_ipython``, ...), dunder names, and the name that holds ``target`` (or
    is ``target_text``): rebinding any of those breaks the shell or loses the model.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{what} {clip(safe_repr(name), 60)} is not a valid Python name")
    if name.startswith("__"):
        raise ValueError(f"{what} {name!r}: names starting with __ belong to Python and IPython; choose another name")
    if name in _IPYTHON_NAMES or name.startswith(("_i", "_o")) or (name[:1] == "_" and name[1:].isdigit()):
        raise ValueError(f"{what} {name!r} is one of IPython's own names (input/output history); choose another name")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ValueError(f"{what} {name!r} is a Python keyword; choose another name")
    if hasattr(builtins, name):
        raise ValueError(f"{what} {name!r} would hide Python's builtin of that name; choose another name")
    if target_text is not None and name == target_text.strip():
        raise ValueError(f"{what} {name!r} would replace TARGET itself; choose another name")
    if namespace is not None and target is not None and namespace.get(name) is target:
        raise ValueError(f"{what} {name!r} holds the model itself; choose another name")
    return name
