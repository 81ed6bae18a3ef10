"""Paths in a graph: flax's keys (attribute names, dict keys, indices) and their text.

>>> path_text(("blocks", 0, "attn", "query", "kernel"))
'blocks[0].attn.query.kernel'
"""

from __future__ import annotations

import functools
import keyword
from typing import Hashable

import jax

from ..text import safe_repr

Path = tuple[Hashable, ...]

_KEY_FIELD = {
    jax.tree_util.SequenceKey: "idx",
    jax.tree_util.DictKey: "key",
    jax.tree_util.GetAttrKey: "name",
    jax.tree_util.FlattenedIndexKey: "key",
}


def path_key(k: object) -> Hashable:
    """A jax key path entry as flax's paths hold it: an attribute name, a dict key, an index."""
    field = _KEY_FIELD.get(type(k))
    if field is not None:
        return getattr(k, field)
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return str(k)


def path_text(path: Path) -> str:
    """The path as Python attribute/index access, ready to paste after ``model`` (remembered for the
    last :data:`TEXTS` paths: a model's rows ask the same ones at every refresh and comparison).

    >>> path_text(("blocks", 0, "attn", "query", "kernel"))
    'blocks[0].attn.query.kernel'
    >>> path_text(("d", "<script>", "class"))
    "d['<script>']['class']"
    """
    if plain_path(path):
        return _cached_text(path)
    return _text(path)  # other keys: made each time (True == 1 and 1.0 == 1 would share a text)


def _text(path: Path) -> str:
    parts: list[str] = []
    for key in path:
        if isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key):
            parts.append(("." if parts else "") + key)
        else:
            parts.append(f"[{safe_repr(key, 200)}]")
    return "".join(parts)


#: paths whose text is remembered
TEXTS = 1 << 16
_cached_text = functools.lru_cache(maxsize=TEXTS)(_text)


def plain_path(path: Path) -> bool:
    """Whether every key is exactly a str or an int: a path a cache of texts may hold (bool and float
    keys equal to an int would find that int's text; other keys may be unhashable)."""
    return all(type(k) is str or type(k) is int for k in path)
