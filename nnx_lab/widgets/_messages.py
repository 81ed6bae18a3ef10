"""What a widget checks of a browser message before reading it."""

from __future__ import annotations

import json
from typing import Any

#: the largest browser message a widget reads (a click is a few hundred bytes; 100k paths are not a click)
MAX_MESSAGE_BYTES = 65_536


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
    """A message's ``id`` as it may be echoed back: an int or a short string, else None."""
    rid = content.get("id") if isinstance(content, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (int, str)) or (isinstance(rid, str) and len(rid) > 64):
        return None
    return rid
