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

import collections
import dataclasses
import functools
import os
import threading
import time
import weakref
from typing import Any, Sequence

import numpy as np

from .. import render
from .._gc import paused_gc
from ..graph import Path, path_text
from ..render import DIGITS, round_significant
from ..stats._stats import STAT_NAMES, Deferred, PendingStats, StatsError, StatsTable
from ._describe import STATUSES, Row
from ._devices import device_summary
from ._layers import expand as expand_layers
from ._layers import parse_layers
from ._payload import stat_columns, structure_payload
from ._structure import StructureCache, describe

#: Significant digits of the statistics sent to the browser (and kept in the history).
__all__ = ["PRECISION", "STATUSES", "PendingSnapshot", "Row", "Snapshot", "round_significant", "snapshot"]

_COUNTS = [STAT_NAMES.index("nan_count"), STAT_NAMES.index("inf_count")]  # columns of stat_matrix

PRECISION = DIGITS  # significant digits of every statistic in a payload or a history


class Snapshot:
    """Everything nnx_lab knows about an object at one moment, as plain data.

    ``rows`` (one per Variable, shared Variables once), ``nodes`` (container path ->
    class name), ``totals`` (per Variable type: count, size, bytes; plus ``"all"``),
    ``device_summary`` and ``elapsed_s`` (what taking the snapshot cost). The statistics are
    also columns: ``stat_matrix`` (one row per Variable, one column per ``STAT_NAMES``).

    >>> from flax import nnx
    >>> from nnx_lab import snapshot
    >>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> snap.root_type, [row.path_text for row in snap.rows], snap.totals["all"]
    ('Linear', ['bias', 'kernel'], {'count': 2, 'size': 9, 'bytes': 36})
    """

    def __init__(
        self,
        root_type: str,
        rows: Sequence[Row],
        nodes: dict[Path, str],
        totals: dict[str, dict[str, int]],
        device_summary: dict,
        elapsed_s: float,
        *,
        stats: StatsTable | None = None,
        live: Sequence[int] = (),
        memo: dict | None = None,
    ):
        # ``rows`` without statistics when ``stats`` is given: row ``live[k]`` has the k-th array's
        # statistics. Rows with statistics are made only when asked for (a viewer's refresh uses the columns).
        self.root_type, self.nodes, self.totals = root_type, nodes, totals
        self.device_summary, self.elapsed_s = device_summary, elapsed_s
        self._base, self._stats, self._live = tuple(rows), stats, list(live)
        self._memo = {} if memo is None else memo  # what depends only on the structure, shared by its snapshots
        self.series = None  # gradients and optimizer state beside the rows (snapshot._series.SeriesColumns)

    @functools.cached_property
    def rows(self) -> tuple[Row, ...]:
        if self._stats is None:
            return self._base
        rows = list(self._base)
        values = self._stats.matrix().tolist()
        for k, i in enumerate(self._live):
            result = self._stats.dict_of(k, values[k])
            if isinstance(result, StatsError):
                rows[i] = dataclasses.replace(
                    rows[i], status="deleted" if result.deleted else "error", note=str(result)
                )
            elif result is not None:
                rows[i] = dataclasses.replace(rows[i], stats=result)
        return tuple(rows)

    @functools.cached_property
    def stat_matrix(self) -> np.ndarray:
        """``float64[len(rows), len(STAT_NAMES)]``: each row's statistics, NaN where it has none."""
        m = np.full((len(self._base), len(STAT_NAMES)), np.nan)
        if self._stats is not None and self._live:
            m[self._live] = self._stats.matrix()
        elif self._stats is None:
            for i, row in enumerate(self._base):
                for j, name in enumerate(STAT_NAMES):
                    v = (row.stats or {}).get(name)
                    if v is not None:
                        m[i, j] = v
        return m

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every row's path, in order."""
        if "paths" not in self._memo:
            self._memo["paths"] = tuple(row.path for row in self._base)
        return self._memo["paths"]

    @property
    def layer_rows(self) -> np.ndarray:
        """Per row, whether it is a layer of a stacked Variable (counted in that Variable's row too)."""
        if "layer_rows" not in self._memo:
            self._memo["layer_rows"] = np.array([row.layer_of is not None for row in self._base], bool)
        return self._memo["layer_rows"]

    def _status_changes(self) -> dict[int, tuple[str, str]]:
        """Rows whose statistics failed: (status, note)."""
        if self._stats is None:
            return {}
        return {self._live[k]: ("deleted" if e.deleted else "error", str(e)) for k, e in self._stats.errors.items()}

    def __len__(self) -> int:
        return len(self._base)

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
        counts = self.stat_matrix[:, _COUNTS]
        hits = np.flatnonzero(np.nan_to_num(counts).sum(axis=1) > 0)
        return self.rows[int(hits[0])] if hits.size else None

    def to_dict(self, precision: int = PRECISION) -> dict:
        """Plain JSON-able, columnar data (statistics rounded to ``precision`` significant digits).

        Paths are encoded as a tree: ``nodes`` lists each container with the index of its
        parent (-1 for the root) and its key; each row names its parent node and key.
        Repeated strings (types, dtypes, shardings...) are indices into ``tables``.
        """
        key = ("payload", precision)
        if key not in self._memo:
            self._memo[key] = structure_payload(self._base, self.nodes)
        structure = self._memo[key]
        rows = dict(structure["rows"])
        tables = {name: list(table) for name, table in structure["tables"].items()}
        changes = self._status_changes()
        if changes:
            status = list(rows["status"])
            notes = list(rows.get("note") or [None] * len(status))
            for i, (new, note) in changes.items():
                if new not in tables["status"]:
                    tables["status"].append(new)
                status[i], notes[i] = tables["status"].index(new), note
            rows["status"], rows["note"] = status, notes
        return {
            "version": 1,
            "root_type": self.root_type,
            "nodes": structure["nodes"],
            "rows": rows,
            "stats": stat_columns(self.stat_matrix, precision),
            "tables": tables,
            "totals": self.totals,
            "devices": self.device_summary,
        }

    @property
    def description(self) -> object:
        """The same object for every snapshot described from one walk of the model (its rows may
        differ only where statistics failed: :meth:`status_key`)."""
        return self._memo

    def status_key(self) -> tuple:
        """What, beside the structure, the rows' descriptions depend on: the rows whose statistics failed."""
        return tuple(sorted(self._status_changes().items()))

    def stats_buffer(self, precision: int = PRECISION) -> tuple[bytes, dict]:
        """The statistics alone, for a front end that has the rows already: ``float32[len(STAT_NAMES),
        len(rows)]`` (column after column, NaN: none) as bytes, rounded like :meth:`to_dict`, and the
        exact values of the few numbers float32 would change (beyond its range, counts beyond 2**24) as
        ``{row: [value or None per statistic]}``."""
        m = round_significant(self.stat_matrix, precision)
        m[:, _COUNTS] = self.stat_matrix[:, _COUNTS]  # counts are never rounded
        f32 = m.astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            lost = (np.isfinite(m) & ~np.isfinite(f32)) | ((m != 0) & (f32 == 0))
            lost[:, _COUNTS] |= m[:, _COUNTS] > 2**24
        exact = {int(i): [None if v != v else v for v in m[i].tolist()] for i in np.flatnonzero(lost.any(axis=1))}
        return np.ascontiguousarray(f32.T).tobytes(), exact

    def to_text(self, max_rows: int | None = 50) -> str:
        return render.text_table(self, max_rows=max_rows)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return render.html_table(self)


def snapshot(obj: Any, *, stats: bool = True, layers: dict | None = None, progress: Any = None) -> Snapshot:
    """Describe every Variable of ``obj`` without copying any array to the host.

    Never raises for one odd Variable (its row gets a status instead). Waits for the
    device; :class:`PendingSnapshot` does not.

    Args:
      obj: an ``nnx.Module`` (any nesting), an ``nnx.State`` or the nested dict
        ``nnx.state``/``nnx.split`` produce, the ``(graphdef, state, ...)`` tuple of ``nnx.split``
        (rows named as in the model), a Linen module inside ``nnx.bridge.ToNNX``,
        an abstract model from ``nnx.eval_shape``, or a single Variable.
      stats: with ``False`` only descriptions are gathered (nothing runs on the device).
      layers: path prefix -> layer axis of stacked Variables (``{"blocks": 0}``): each gets one row
        per layer after its own (see :mod:`._layers`; flax's ``PARTITION_NAME`` metadata needs none).
      progress: for a checkpoint directory, called with a ``core.checkpoint.Progress`` after every
        block its statistics stream (``False``: nothing; default: a line in a notebook, see
        ``core.checkpoint.checkpoint_rows``).

    Raises:
      TypeError: ``obj`` is none of the above, ``layers`` is not a dict of prefix -> int, or
        ``progress`` is given for a model.
      ValueError: a declared prefix holds no Variable, or one of its Variables has no such axis.

    >>> from flax import nnx
    >>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> len(snap.rows), sorted(snap.rows[1].stats)[:3]
    (2, ['abs_max', 'inf_count', 'max'])
    >>> snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), stats=False).rows[0].stats is None
    True
    """
    if progress is not None and not isinstance(obj, (str, os.PathLike)):
        raise TypeError("progress= is for a checkpoint directory (its statistics stream from disk); a model has none")
    if isinstance(obj, (str, os.PathLike)):  # an Orbax checkpoint directory: rows from its metadata (core.checkpoint)
        from ..checkpoint import checkpoint_rows

        found = checkpoint_rows(obj, stats=stats, layers=layers, progress=progress)
        snap = Snapshot(
            "Checkpoint", [Row(**r) for r in found.rows], found.nodes, found.totals, device_summary(), found.elapsed_s
        )
        snap.checkpoint = found.info  # its directory and bytes on disk
        return snap
    structure = _recent_structure(obj, layers)
    # A structure seen before (its launch plan kept): statistics as a viewer's refresh takes them, by
    # its one-launch programs with the one-pass guesses the last snapshot learned.
    seen = structure is not None and structure.plan is not None
    return PendingSnapshot(obj, stats=stats, layers=layers, structure=structure, repeated=seen).finish()


#: One-off snapshots remember the structures of this many objects (by weak reference), so that a
#: second ``snapshot(model)`` of an unchanged model costs what a viewer's refresh does, not a walk.
RECENT_STRUCTURES = 8
_recent: collections.OrderedDict[tuple, tuple[Any, StructureCache]] = collections.OrderedDict()
_recent_lock = threading.Lock()


def _recent_structure(obj: Any, layers: Any) -> StructureCache | None:
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


class Unchanged(Exception):
    """Raised by :class:`PendingSnapshot` given ``unless_same``: the model holds the very arrays (and
    structure) of that earlier refresh, so its statistics would be the same: nothing is launched."""


def _same_arrays(refs: Sequence[Any] | None, arrays: Sequence[Any]) -> bool:
    return (
        refs is not None and len(refs) == len(arrays) and all(r is not None and r() is a for r, a in zip(refs, arrays))
    )


def _refs(arrays: Sequence[Any]) -> list:
    out = []
    for a in arrays:
        try:
            out.append(weakref.ref(a))
        except TypeError:  # not weakly referable (a Python number): never "the same"
            out.append(None)
    return out


def _computed(arrays: Sequence[Any], sample: int = 8) -> bool:
    """Whether the arrays are computed (a few of them asked, first and last: a step's outputs
    arrive together)."""
    picks = arrays if len(arrays) <= sample else [*arrays[: sample // 2], *arrays[-(sample // 2) :]]
    try:
        return all(not hasattr(a, "is_ready") or (not a.is_deleted() and a.is_ready()) for a in picks)
    except Exception:  # noqa: BLE001 - an array gone odd: not a measurement
        return False


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

    @paused_gc()
    def __init__(
        self,
        obj: Any,
        *,
        stats: bool = True,
        repeated: bool = False,
        defer: bool = False,
        structure: StructureCache | None = None,
        series: Any = None,
        layers: Any = None,
        unless_same: Sequence[Any] | None = None,
    ):
        # unless_same: ``array_refs`` of an earlier refresh: raise Unchanged when nothing differs from it.
        # series: arrays reduced with the parameters (a snapshot._series dispatch: prepare(described)
        # -> (arrays, layout key), finish(their StatsTable, rows) -> the snapshot's ``series``)
        start = time.thread_time()
        spec = layers if isinstance(layers, tuple) else parse_layers(layers)
        described = structure.describe(obj, stats=stats) if structure is not None else describe(obj, stats=stats)
        described = expand_layers(described, spec)
        self._rows, self._live = described.rows, described.live
        self._nodes, self._root_type, self._devices = described.nodes, described.root_type, described.devices
        self.reused = described.reused  # the structure of an earlier refresh, not walked again
        self._memo = described.memo
        if "totals" not in self._memo:
            self._memo["totals"] = _totals(self._rows)
        self._totals = self._memo["totals"]
        self._stats, self._series = None, series
        extra, layout = series.prepare(described) if series is not None and stats else ([], None)
        try:
            if described.reused and unless_same is not None and _same_arrays(unless_same, described.arrays + extra):
                raise Unchanged
            try:
                self._stats = self._launch(described, extra, layout, series, structure, repeated, defer)
            except Deferred:
                # The program of this layout (new series: the loop's first gradients) is compiling: the
                # refresh goes on with what an existing program reduces, the parameters and the series
                # whose layout is unchanged; the rest follow once it is ready.
                fallbacks = series.fallbacks() if extra else []
                if not fallbacks:
                    raise
                for k, without in enumerate(fallbacks):
                    extra, layout = series.prepare(described, without)
                    try:
                        self._stats = self._launch(described, extra, layout, series, structure, repeated, defer)
                        break
                    except Deferred:
                        if k == len(fallbacks) - 1:
                            raise
        finally:
            if series is not None:
                series.release()
        # Weak references to what this refresh reduces (what a compiling program left out is not
        # among them): a later refresh of the very same arrays is skipped, so a cell that did not
        # touch the model costs a flatten and nothing on the device.
        self.array_refs = _refs(described.arrays + extra)
        # Whether it reduces logged gradients/updates (a refresh dropped unpublished keeps them, see Watcher).
        self.logged = bool(series is not None and stats and getattr(series, "logged", False))
        # Launched with its inputs already computed (nothing queued before it): the time until its
        # results arrive is the device's time for it (Watcher budgets it like the host's).
        self.launched_at = time.perf_counter()
        self.inputs_ready = self._stats is not None and _computed(described.arrays + extra)
        del described, extra  # the arrays: held only by the model and, until they have run, by the queued kernels
        self.host_s = time.thread_time() - start

    @staticmethod
    def _launch(
        described: Any, extra: list, layout: Any, series: Any, structure: Any, repeated: bool, defer: bool
    ) -> PendingStats | None:
        arrays = described.arrays + extra if extra else described.arrays
        if not arrays:
            return None
        plan = structure.plan_for(layout) if described.reused else None
        layers = described.layers
        if extra and getattr(series, "groups", None):  # stacked gradients/state: per layer too
            layers = {**layers, **{len(described.arrays) + k: g for k, g in series.groups.items()}}
        stats = PendingStats(arrays, repeated=repeated, defer=defer, plan=plan, layers=layers)
        if structure is not None:
            structure.set_plan(layout, stats.plan)
        return stats

    def ready(self) -> bool:
        return self._stats is None or self._stats.ready()

    def device_time(self) -> float | None:
        """Seconds from its launch until now, where its inputs were computed at launch (call it when
        its results have just arrived: the device's time for it); None otherwise."""
        return time.perf_counter() - self.launched_at if self.inputs_ready else None

    def wait(self) -> None:
        """Block until the statistics have arrived (the time is the device's, not counted)."""
        if self._stats is not None:
            self._stats.wait()

    @paused_gc()
    def finish(self) -> Snapshot:
        """The snapshot, statistics included (waits for the devices if they are not there yet)."""
        self.wait()
        start = time.thread_time()
        table = self._stats.table() if self._stats is not None else None
        series = None
        if table is not None and len(self._live) < table.n:
            table, series = table.split(len(self._live))
        if not self._live:
            table = None
        snap = Snapshot(
            self._root_type,
            self._rows,
            self._nodes,
            self._totals,
            device_summary(self._devices),
            self.host_s,
            stats=table,
            live=self._live if table is not None else (),
            memo=self._memo,
        )
        if self._series is not None:
            snap.series = self._series.finish(series, len(self._rows))
        self.host_s += time.thread_time() - start
        snap.elapsed_s = self.host_s
        return snap


def _totals(rows: list[Row]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for row in rows:
        if row.layer_of is not None:  # a layer of a Variable counted already
            continue
        for key in (row.type, "all"):
            t = totals.setdefault(key, {"count": 0, "size": 0, "bytes": 0})
            t["count"] += 1
            t["size"] += row.size or 0
            t["bytes"] += row.nbytes or 0
    totals["all"] = totals.pop("all", {"count": 0, "size": 0, "bytes": 0})
    return totals
