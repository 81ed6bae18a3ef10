"""What a widget checks of a browser message before reading it."""

from __future__ import annotations

import json
import math
from typing import Any

from ..core.text import quote, safe_repr

#: the largest browser message a widget reads (a click is a few hundred bytes; 100k paths are not a click)
MAX_MESSAGE_BYTES = 65_536
#: the most characters of a message's ``id`` echoed back as text (a dict or a list id is quoted to this)
ID_CHARS = 200
#: the largest integer id echoed as a number (JavaScript's exact integers)
_MAX_SAFE_INT = 2**53 - 1


def message_problem(content: Any) -> str | None:
    """Why a browser message is refused before it is read, or None: not an object, or too large.

    >>> message_problem({"type": "view", "name": "x" * 100_000})
    'message of 100,028 bytes refused (at most 65,536)'
    """
    if not isinstance(content, dict):
        return f"message must be an object, not {type(content).__name__}"
    size = len(json.dumps(content, default=str))
    if size > MAX_MESSAGE_BYTES:
        return f"message of {size:,} bytes refused (at most {MAX_MESSAGE_BYTES:,})"
    return None


def message_id(content: Any) -> Any:
    """A message's ``id`` as the answer echoes it, so a front end can match the answer to its request:
    an int (of JavaScript's exact ones), a finite float or a string of at most :data:`ID_CHARS`
    characters as it is; any other id (a dict, a 10,000-element list, a long string) as its JSON text
    quoted to :data:`ID_CHARS` characters. None when the message has no id.

    >>> message_id({"id": 7}), message_id({"id": {"req": 3}}), message_id({"id": list(range(10_000))})[-26:]
    (7, '{"req": 3}', '… (58,690 more characters)')
    """
    rid = content.get("id") if isinstance(content, dict) else None
    if rid is None:
        return None
    if isinstance(rid, int) and not isinstance(rid, bool) and abs(rid) <= _MAX_SAFE_INT:
        return rid
    if isinstance(rid, float) and math.isfinite(rid):
        return rid
    if isinstance(rid, str):
        return quote(rid, ID_CHARS)
    try:
        text = json.dumps(rid, default=safe_repr)
    except (ValueError, TypeError, RecursionError):  # a cycle, NaN keys, nesting past the recursion limit
        text = safe_repr(rid)
    return quote(text, ID_CHARS)
