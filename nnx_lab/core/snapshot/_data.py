"""A snapshot as plain data: one :class:`~._describe.Row` per Variable, the statistics as columns too,
the browser's payload and the float32 buffer a refresh sends (see :mod:`._snapshot` for taking one)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np

from .. import render
from ..graph import Path, path_text
from ..render import DIGITS, round_significant
from ..stats import STAT_NAMES, StatsError, StatsTable
from ._describe import Row
from ._payload import stat_columns, structure_payload
from ._structure import Structure

__all__ = ["PRECISION", "Snapshot", "totals"]

_COUNTS = [STAT_NAMES.index("nan_count"), STAT_NAMES.index("inf_count")]  # columns of stat_matrix

PRECISION = DIGITS  # significant digits of every statistic in a payload or a history


class Snapshot:
    """Everything nnx_lab knows about an object at one moment, as plain data.

    ``rows`` (one per Variable, shared Variables once), ``nodes`` (container path ->
    class name), ``totals`` (per Variable type: count, size, bytes; plus ``"all"``),
    ``device_summary`` and ``elapsed_s`` (what taking the snapshot cost). The statistics are
    also columns: ``stat_matrix`` (one row per Variable, one column per ``STAT_NAMES``).
    ``checkpoint``: what ``snapshot(path)`` read (its directory and bytes on disk), else None.

    >>> from flax import nnx
    >>> from nnx_lab import snapshot
    >>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> snap.root_type, [row.path_text for row in snap.rows], snap.totals["all"]
    ('Linear', ['bias', 'kernel'], {'count': 2, 'size': 9, 'bytes': 36})
    """

    checkpoint: dict | None = None

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
        structure: Structure | None = None,
    ):
        # ``rows`` without statistics when ``stats`` is given: row ``live[k]`` has the k-th array's
        # statistics. Rows with statistics are made only when asked for (a viewer's refresh uses the columns).
        self.root_type, self.nodes, self.totals = root_type, nodes, totals
        self.device_summary, self.elapsed_s = device_summary, elapsed_s
        self._base, self._stats, self._live = tuple(rows), stats, list(live)
        self._structure = Structure() if structure is None else structure  # shared by the structure's snapshots
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
        if self._structure.paths is None:
            self._structure.paths = tuple(row.path for row in self._base)
        return self._structure.paths

    @property
    def layer_rows(self) -> np.ndarray:
        """Per row, whether it is a layer of a stacked Variable (counted in that Variable's row too)."""
        if self._structure.layer_rows is None:
            self._structure.layer_rows = np.array([row.layer_of is not None for row in self._base], bool)
        return self._structure.layer_rows

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
        if self._structure.payload is None:  # the statistics' precision is not part of it
            self._structure.payload = structure_payload(self._base, self.nodes)
        structure = self._structure.payload
        rows = dict(structure["rows"])
        tables = {name: list(table) for name, table in structure["tables"].items()}
        changes = self._status_changes()
        if changes:
            status = list(rows["status"])
            notes: list[str | None] = list(rows.get("note") or [None] * len(status))
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
        return self._structure

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
        with np.errstate(invalid="ignore", over="ignore"):  # beyond float32: inf here, exact below
            f32 = m.astype(np.float32)
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


def totals(rows: list[Row]) -> dict[str, dict[str, int]]:
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
