"""One-off snapshots remember the structures of the last few objects they described (by weak reference),
so that a second ``snapshot(model)`` of an unchanged model costs what a viewer's refresh does, not a walk."""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any

from ._structure import StructureCache

__all__ = ["RECENT_STRUCTURES", "recent_structure"]

#: How many objects' structures are remembered.
RECENT_STRUCTURES = 8
_recent: collections.OrderedDict[tuple, tuple[Any, StructureCache]] = collections.OrderedDict()
_recent_lock = threading.Lock()


def recent_structure(obj: Any, layers: Any) -> StructureCache | None:
    """The StructureCache of ``obj`` (with these ``layers``) for one-off snapshots (None for an object
    that cannot be held by weak reference, such as a dict: it is walked every time)."""
    try:
        ref = weakref.ref(obj)
    except TypeError:
        return None
    with _recent_lock:
        for key in [k for k, (r, _) in _recent.items() if r() is None]:
            del _recent[key]
        key = (id(obj), repr(layers))
        entry = _recent.get(key)
        if entry is not None and entry[0]() is obj:
            _recent.move_to_end(key)
            return entry[1]
        structure = StructureCache()
        _recent[key] = (ref, structure)
        while len(_recent) > RECENT_STRUCTURES:
            _recent.popitem(last=False)
        return structure
