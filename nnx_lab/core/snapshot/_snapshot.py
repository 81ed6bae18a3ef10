"""Snapshots: one row per Variable, its description and on-device statistics.

>>> from flax import nnx
>>> import nnx_lab
>>> snap = nnx_lab.snapshot(nnx.Linear(3, 4, rngs=nnx.Rngs(0)))
>>> [(r.path, r.type, r.shape, r.status) for r in snap.rows]
[(('bias',), 'Param', (4,), 'ok'), (('kernel',), 'Param', (3, 4), 'ok')]
>>> snap.rows[0].stats["zero_frac"]
1.0
>>> snap.totals["Param"]
{'count': 2, 'size': 16, 'bytes': 64}
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import numpy as np

from ._devices import device_summary
from ._describe import STATUSES, Row
from ._structure import StructureCache, describe
from .. import render
from ..render import DIGITS, round_significant
from .._util import json_key
from ._stats import STAT_NAMES, PendingStats, StatsError
from ..graph import Path, path_text

#: Significant digits of the statistics sent to the browser (and kept in the history).
__all__ = ["PRECISION", "STATUSES", "PendingSnapshot", "Row", "Snapshot", "round_significant", "snapshot"]

PRECISION = DIGITS  # significant digits of every statistic in a payload or a history

@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Everything nnx_lab knows about an object at one moment, as plain data.

    ``rows`` (one per Variable, shared Variables once), ``nodes`` (container path ->
    class name), ``totals`` (per Variable type: count, size, bytes; plus ``"all"``),
    ``device_summary`` and ``elapsed_s`` (what taking the snapshot cost).

    >>> from flax import nnx
    >>> from nnx_lab import snapshot
    >>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> snap.root_type, [row.path_text for row in snap.rows], snap.totals["all"]
    ('Linear', ['bias', 'kernel'], {'count': 2, 'size': 9, 'bytes': 36})
    """

    root_type: str
    rows: tuple[Row, ...]
    nodes: dict[Path, str]
    totals: dict[str, dict[str, int]]
    device_summary: dict
    elapsed_s: float

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, path: Path | str) -> Row:
        """The row at ``path``: a key tuple, or its text form (``"blocks[0].kernel"``); aliases work too."""
        return self._index[path]

    @functools.cached_property
    def _index(self) -> dict[Path | str, Row]:
        index: dict[Path | str, Row] = {}
        for row in self.rows:
            for p in (row.path, *row.aliases):
                index[p] = index[path_text(p)] = row
        return index

    @property
    def first_nonfinite(self) -> Row | None:
        """The first row holding a NaN or Inf, if any."""
        for row in self.rows:
            if row.stats and (row.stats.get("nan_count") or row.stats.get("inf_count")):
                return row
        return None

    def to_dict(self, precision: int = PRECISION) -> dict:
        """Plain JSON-able, columnar data (statistics rounded to ``precision`` significant digits).

        Paths are encoded as a tree: ``nodes`` lists each container with the index of its
        parent (-1 for the root) and its key; each row names its parent node and key.
        Repeated strings (types, dtypes, shardings...) are indices into ``tables``.
        """
        nodes = _NodeTable(self.nodes)
        tables = _Interner(("type", "dtype", "sharding", "devices", "metadata", "status", "logical"))
        cols: dict[str, list] = {k: [] for k in (
            "parent", "key", "type", "shape", "dtype", "nbytes", "sharding", "devices",
            "metadata", "status", "logical", "aliases", "note", "mismatch")}
        for row in self.rows:
            cols["parent"].append(nodes.index(row.path[:-1]) if row.path else -1)
            cols["key"].append(json_key(row.path[-1]) if row.path else "")
            for column in tables.columns:
                cols[column].append(tables.index(column, getattr(row, column)))
            cols["shape"].append(list(row.shape) if row.shape is not None else None)
            cols["nbytes"].append(row.nbytes)
            cols["aliases"].append([path_text(a) for a in row.aliases] or None)
            cols["note"].append(row.note)
            cols["mismatch"].append(row.mismatch)
        for sparse in ("aliases", "note", "mismatch"):  # empty for every row: bytes that say nothing
            if all(v is None for v in cols[sparse]):
                del cols[sparse]
        return {
            "version": 1,
            "root_type": self.root_type,
            "nodes": nodes.columns(),
            "rows": cols,
            "stats": _stat_columns(self.rows, precision),
            "tables": tables.tables,
            "totals": self.totals,
            "devices": self.device_summary,
        }

    def to_text(self, max_rows: int | None = 50) -> str:
        return render.text_table(self, max_rows=max_rows)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return render.html_table(self)


class _NodeTable:
    """The containers of a snapshot as a tree of columns: each node's parent index (-1: the root),
    key and type, every container of ``nodes`` listed first in their order, then any parent a row needs."""

    def __init__(self, nodes: dict[Path, str]):
        self._nodes = nodes
        self._index: dict[Path, int] = {}
        self._parent: list[int] = []
        self._key: list[Any] = []
        self._type: list[str] = []
        for path in nodes:
            self.index(path)

    def index(self, path: Path) -> int:
        if not path:
            return -1
        if path not in self._index:
            parent = self.index(path[:-1])
            self._index[path] = len(self._parent)
            self._parent.append(parent)
            self._key.append(json_key(path[-1]))
            self._type.append(self._nodes.get(path, ""))
        return self._index[path]

    def columns(self) -> dict[str, list]:
        return {"parent": self._parent, "key": self._key, "type": self._type}


class _Interner:
    """Repeated strings of some columns (types, dtypes, shardings...) as indices into one table each."""

    def __init__(self, columns: tuple[str, ...]):
        self.columns = columns
        self.tables: dict[str, list] = {k: [] for k in columns}
        self._lookup: dict[str, dict] = {k: {} for k in columns}

    def index(self, column: str, value: Any) -> int:
        if value is None:
            return -1
        lookup = self._lookup[column]
        if value not in lookup:
            lookup[value] = len(self.tables[column])
            self.tables[column].append(value)
        return lookup[value]


def _stat_columns(rows: tuple[Row, ...], precision: int) -> dict[str, list]:
    """One column per statistic (None where a row has none), rounded except the counts."""
    columns = {name: [(row.stats or {}).get(name) for row in rows] for name in STAT_NAMES}
    return {name: column if name.endswith("_count") else _rounded_list(column, precision)
            for name, column in columns.items()}


def _rounded_list(column: list, digits: int) -> list:
    a = round_significant([np.nan if v is None else v for v in column], digits)
    return [None if np.isnan(v) else float(f"{v:.{digits}g}") for v in a.tolist()]


def snapshot(obj: Any, *, stats: bool = True) -> Snapshot:
    """Describe every Variable of ``obj`` without copying any array to the host.

    Never raises for one odd Variable (its row gets a status instead). Waits for the
    device; :class:`PendingSnapshot` does not.

    Args:
      obj: an ``nnx.Module`` (any nesting), an ``nnx.State`` or the nested dict
        ``nnx.state``/``nnx.split`` produce, a Linen module inside ``nnx.bridge.ToNNX``,
        an abstract model from ``nnx.eval_shape``, or a single Variable.
      stats: with ``False`` only descriptions are gathered (nothing runs on the device).

    Raises:
      TypeError: ``obj`` is none of the above.

    >>> from flax import nnx
    >>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> len(snap.rows), sorted(snap.rows[1].stats)[:3]
    (2, ['abs_max', 'inf_count', 'max'])
    >>> snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), stats=False).rows[0].stats is None
    True
    """
    return PendingSnapshot(obj, stats=stats).finish()


class PendingSnapshot:
    """A snapshot whose statistics are still on their way from the devices.

    Creating one describes the Variables and dispatches the statistics kernels, which queue
    behind the device's work in order; nothing waits. :meth:`ready` says without waiting whether
    :meth:`finish` would return at once. ``host_s`` adds up the host's CPU time spent on it (the
    thread's CPU clock): never the time the device spends on earlier work, nor the time a dispatch
    waits for a slot in a full device queue.

    >>> from flax import nnx
    >>> pending = PendingSnapshot(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
    >>> pending.wait(); pending.ready()
    True
    >>> pending.finish().rows[1].stats["norm"] > 0
    True
    """

    def __init__(self, obj: Any, *, stats: bool = True, repeated: bool = False, defer: bool = False,
                 structure: StructureCache | None = None):
        start = time.thread_time()
        described = structure.describe(obj, stats=stats) if structure is not None else describe(obj, stats=stats)
        self._rows, self._live = described.rows, described.live
        self._nodes, self._root_type, self._devices = described.nodes, described.root_type, described.devices
        self.reused = described.reused  # the structure of an earlier refresh, not walked again
        self._stats = None
        if self._live:
            plan = structure.plan if described.reused else None
            self._stats = PendingStats(described.arrays, repeated=repeated, defer=defer, plan=plan)
            if structure is not None:
                structure.plan = self._stats.plan
        del described  # the arrays: held only by the model and, until they have run, by the queued kernels
        self.host_s = time.thread_time() - start

    def ready(self) -> bool:
        return self._stats is None or self._stats.ready()

    def wait(self) -> None:
        """Block until the statistics have arrived (the time is the device's, not counted)."""
        if self._stats is not None:
            self._stats.wait()

    def finish(self) -> Snapshot:
        """The snapshot, statistics included (waits for the devices if they are not there yet)."""
        self.wait()
        start = time.thread_time()
        rows = list(self._rows)
        if self._stats is not None:
            for i, result in zip(self._live, self._stats.result()):
                if isinstance(result, StatsError):
                    rows[i] = dataclasses.replace(rows[i], status="deleted" if result.deleted else "error",
                                                  note=str(result))
                else:
                    rows[i] = dataclasses.replace(rows[i], stats=result)
        self.host_s += time.thread_time() - start
        return Snapshot(
            root_type=self._root_type,
            rows=tuple(rows),
            nodes=self._nodes,
            totals=_totals(rows),
            device_summary=device_summary(self._devices),
            elapsed_s=self.host_s,
        )


def _totals(rows: list[Row]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for row in rows:
        for key in (row.type, "all"):
            t = totals.setdefault(key, {"count": 0, "size": 0, "bytes": 0})
            t["count"] += 1
            t["size"] += row.size or 0
            t["bytes"] += row.nbytes or 0
    totals["all"] = totals.pop("all", {"count": 0, "size": 0, "bytes": 0})
    return totals
