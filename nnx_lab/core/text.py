"""One-line messages and safe reprs of user values, defined once (no jax or IPython import: the
extension and the widgets use these too).

>>> one_line(ValueError("first line\\nsecond line"))
'ValueError: first line'
>>> safe_repr(type("Evil", (), {"__repr__": lambda self: 1 / 0})())
'<repr failed: ZeroDivisionError>'
>>> clip("x" * 300, 10)
'xxxxxxxxx…'
"""

from __future__ import annotations

from typing import Any

#: the longest user text echoed back in a message (a name, an option, a path)
ECHO_CHARS = 200


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(text: Any, limit: int = ECHO_CHARS) -> str:
    """User text as a message may quote it: at most ``limit`` characters, the rest counted (a 1 MB
    key or path never makes a 1 MB status line). Non-strings are quoted by their repr.

    >>> quote("blocks"), quote("k" * 1000, 10)
    ('blocks', 'kkkkkkkkkk… (990 more characters)')
    """
    text = text if isinstance(text, str) else safe_repr(text)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def quote_repr(x: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(x)`` of a user value (a name, a prefix) as :func:`quote` quotes text.

    >>> quote_repr("x" * 500, 4)
    "'xxx… (498 more characters)"
    """
    return quote(safe_repr(x), limit)


def safe_repr(x: Any, limit: int | None = None) -> str:
    """``repr(x)``, or ``<repr failed: ErrorType>`` when that repr raises (user objects can)."""
    try:
        text = repr(x)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
    except Exception as e:  # noqa: BLE001 - any user __repr__ may raise anything
        return f"<repr failed: {type(e).__name__}>"
    return clip(text, limit) if limit else text


def json_key(key: object) -> int | str:
    """A path key as JSON can carry it: ints and strings as they are, anything else as its text.

    >>> json_key(3), json_key("kernel"), json_key(True)
    (3, 'kernel', 'True')
    """
    if isinstance(key, (int, str)) and not isinstance(key, bool):
        return key
    try:
        return str(key)
    except Exception as e:  # noqa: BLE001 - a user key's __str__ may raise
        return f"<str failed: {type(e).__name__}>"


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return clip(lines[0] if lines else "", limit)


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
        text = first_line(text, limit)
        return clip(f"{type(x).__name__}: {text}" if text else type(x).__name__, limit)
    return first_line(safe_repr(x), limit)


def a_kind(name: str) -> str:
    """``name`` with its article: ``a_kind("int")`` is ``'an int'``."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
