"""Small helpers every layer needs, defined once: one-line messages, safe reprs, binding names.

No jax or IPython import here: the extension and the widgets use these too.

>>> one_line(ValueError("first line\\nsecond line"))
'ValueError: first line'
>>> safe_repr(type("Evil", (), {"__repr__": lambda self: 1 / 0})())
'<repr failed: ZeroDivisionError>'
>>> clip("x" * 300, 10)
'xxxxxxxxx…'
>>> check_name("__builtins__")
Traceback (most recent call last):
...
ValueError: --as '__builtins__': names starting with __ belong to Python and IPython; choose another name
"""

from __future__ import annotations

import builtins
import keyword
from typing import Any, Mapping

#: the longest user text echoed back in a message (a name, an option, a path)
ECHO_CHARS = 200

# Names IPython keeps in the user namespace itself; rebinding one breaks the shell.
_IPYTHON_NAMES = frozenset({"get_ipython", "In", "Out", "exit", "quit", "_", "__", "___", "_dh", "_ih", "_oh",
                            "_sh"})


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe_repr(x: Any, limit: int | None = None) -> str:
    """``repr(x)``, or ``<repr failed: ErrorType>`` when that repr raises (user objects can)."""
    try:
        text = repr(x)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
    except Exception as e:  # noqa: BLE001 - any user __repr__ may raise anything
        return f"<repr failed: {type(e).__name__}>"
    return clip(text, limit) if limit else text


def one_line(x: Any, limit: int = 300) -> str:
    """An exception (``Type: first line``) or a value's repr, as one line of at most ``limit`` characters.

    Multi-line messages (jax's TracerBoolConversionError, a user filter raising ``"a\\nb"``) keep
    their first non-empty line.
    """
    if isinstance(x, BaseException):
        try:
            text = str(x)
        except Exception as e:  # noqa: BLE001 - a user exception's __str__ may raise
            text = f"<str failed: {type(e).__name__}>"
        lines = [line for line in text.strip().splitlines() if line.strip()]
        text = f"{type(x).__name__}: {lines[0].strip()}" if lines else type(x).__name__
    else:
        text = safe_repr(x)
        lines = text.strip().splitlines()
        text = lines[0] if lines else text
    return clip(text, limit)


def check_name(name: Any, *, what: str = "--as", namespace: Mapping[str, Any] | None = None,
               target: Any = None, target_text: str | None = None) -> str:
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
