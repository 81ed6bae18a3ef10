"""One bounded memo for what nnx_lab remembers across calls (compiled programs, costs, facts per
sharding): the least recently used entries leave beyond ``maxsize``, so a long session that meets
many models does not grow without bound.

>>> m = Memo(2)
>>> m["a"], m["b"] = 1, 2
>>> m.get("a")          # used: now the most recent
1
>>> m["c"] = 3          # "b" leaves
>>> "b" in m, len(m), m.get("b", "gone")
(False, 2, 'gone')
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A thread-safe least-recently-used mapping of at most ``maxsize`` entries."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: Any = None) -> Any:
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def __getitem__(self, key: K) -> V:
        with self._lock:
            self._data.move_to_end(key)
            return self._data[key]

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
