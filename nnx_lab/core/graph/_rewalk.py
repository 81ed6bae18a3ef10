"""The structure of the last fast walks, reused when the same object is walked again unchanged.

A second walk of a model (``compare`` against a baseline at every refresh, a one-off ``snapshot``
after a viewer's) flattens it again, which is needed anyway to know that nothing moved, and then
skips what the first walk worked out per Variable: its path from jax's keys, that stepping the path
from the object reaches that Variable, its declared type. Unchanged means: the same object, the same
treedef (every container and static attribute equal), and at each position a Variable of the same
declared type with the same identity as before. Values and metadata are read afresh every time.

Nothing here keeps a model, a Variable or an array alive: the object is held by weak reference (its
entry goes when it does), Variables by ``id`` only (an id reused by a new Variable at the very same
position, of the same type, gives the very same leaf a fresh walk would give), at most
:data:`REMEMBERED` objects.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import weakref
from typing import Any, Callable

from .. import compat

__all__ = ["REMEMBERED", "RecentWalks"]

#: objects whose walk is remembered at once (a viewer's model and its baseline, a compare's two sides...)
REMEMBERED = 8


@dataclasses.dataclass
class _Walked:
    ref: weakref.ref
    treedef: Any
    ids: list[int]
    types: list[type]
    leaves: list[Any]  # the walk's leaves, values and metadata left out (None / {})
    nodes: dict
    root_type: str


class RecentWalks:
    """What :func:`~nnx_lab.core.graph.walk_graph`'s fast walk found, per object, reused while unchanged."""

    def __init__(self, size: int = REMEMBERED):
        self.size = size
        self._walks: collections.OrderedDict[int, _Walked] = collections.OrderedDict()
        self._lock = threading.Lock()  # a viewer's refresh thread and the user's compare may walk at once
        # Keys of objects gone, purged under the lock by the next call: a weak reference's callback
        # may run inside a garbage collection that started while this thread held the lock.
        self._gone: collections.deque[int] = collections.deque()

    def reuse(self, obj: Any, flat: list, treedef: Any, fresh: Callable[[Any, Any], Any]) -> Any | None:
        """The remembered walk of ``obj`` with each leaf made anew by ``fresh(leaf, variable)`` (its value
        and metadata read now), when ``flat`` (``(keys, Variable)`` from flattening it now) and ``treedef``
        match the remembered ones; else None."""
        with self._lock:
            self._purge()
            walked = self._walks.get(id(obj))
            if walked is None or walked.ref() is not obj:
                return None
            self._walks.move_to_end(id(obj))
        if len(flat) != len(walked.ids):
            return None
        try:
            if treedef != walked.treedef:
                return None
        except Exception as e:  # noqa: BLE001 - boundary: a static attribute's __eq__ (a user's, a numpy array's)
            logging.getLogger("nnx_lab").debug(
                "nnx_lab: comparing %s's treedefs raised %r: walked afresh", type(obj).__name__, e
            )
            return None
        for (_, var), known, declared in zip(flat, walked.ids, walked.types):
            if id(var) != known or compat.variable_type(var) is not declared:
                return None
        leaves = []
        for leaf, (_, var) in zip(walked.leaves, flat):
            made = fresh(leaf, var)
            if made is None:  # its value is now a tuple or dict of arrays: several leaves, walked afresh
                return None
            leaves.append(made)
        return leaves, dict(walked.nodes), walked.root_type

    def remember(self, obj: Any, flat: list, treedef: Any, leaves: list, nodes: dict, root_type: str) -> None:
        """Keep the walk of ``obj`` (one leaf per flattened Variable, in order); objects without weak
        references (a dict, a State) are not kept."""
        if len(leaves) != len(flat):
            return
        key = id(obj)
        try:
            ref = weakref.ref(obj, lambda _, key=key: self._forget(key))
        except TypeError:
            return
        bare = [dataclasses.replace(leaf, value=None, metadata={}) for leaf in leaves]
        walked = _Walked(
            ref,
            treedef,
            [id(var) for _, var in flat],
            [compat.variable_type(var) for _, var in flat],
            bare,
            dict(nodes),
            root_type,
        )
        with self._lock:
            self._purge()
            self._walks[key] = walked
            self._walks.move_to_end(key)
            while len(self._walks) > self.size:
                self._walks.popitem(last=False)

    def _forget(self, key: int) -> None:
        self._gone.append(key)  # no lock here (see __init__)

    def _purge(self) -> None:
        """Drop the walks of objects gone (the caller holds the lock)."""
        while self._gone:
            key = self._gone.popleft()
            walked = self._walks.get(key)
            if walked is not None and walked.ref() is None:
                del self._walks[key]

    def clear(self) -> None:
        with self._lock:
            self._walks.clear()
            self._gone.clear()

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._walks)
