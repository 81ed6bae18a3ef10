"""A snapshot's payload for the browser, as columns: the structure's (computed once per structure)
and the statistics' (rounded as they are shown)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..graph import Path, path_text
from ..render import round_significant
from ..stats import STAT_NAMES
from ..text import json_key

if TYPE_CHECKING:
    from ._describe import Row


class _NodeTable:
    """The containers of a snapshot as a tree of columns: each node's parent index (-1: the root),
    key and type, every container of ``nodes`` listed first in their order, then any parent a row needs."""

    def __init__(self, nodes: dict[Path, str]):
        self._nodes = nodes
        self._index: dict[Path, int] = {}
        self._parent: list[int] = []
        self._key: list[int | str] = []
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

    def index(self, column: str, value: str | None) -> int:
        if value is None:
            return -1
        lookup = self._lookup[column]
        if value not in lookup:
            lookup[value] = len(self.tables[column])
            self.tables[column].append(value)
        return lookup[value]


def structure_payload(rows: Sequence[Row], nodes: dict[Path, str]) -> dict:
    """The columns of a payload that follow from the structure alone (statistics and status changes apart)."""
    table = _NodeTable(nodes)
    tables = _Interner(("type", "dtype", "sharding", "devices", "metadata", "status", "logical"))
    cols: dict[str, list] = {
        k: []
        for k in (
            "parent",
            "key",
            "type",
            "shape",
            "dtype",
            "nbytes",
            "sharding",
            "devices",
            "metadata",
            "status",
            "logical",
            "aliases",
            "note",
            "mismatch",
            "layer_of",
            "layer",
        )
    }
    for row in rows:
        # A layer's row sits beside its stacked Variable's (layer_of names it): the Variable is no container.
        home = row.path[:-1] if row.layer_of is None else row.path[:-2]
        cols["parent"].append(table.index(home) if row.path else -1)
        cols["key"].append(json_key(row.path[-1]) if row.path else "")
        for column in tables.columns:
            cols[column].append(tables.index(column, getattr(row, column)))
        cols["shape"].append(list(row.shape) if row.shape is not None else None)
        cols["nbytes"].append(row.nbytes)
        cols["aliases"].append([path_text(a) for a in row.aliases] or None)
        cols["note"].append(row.note)
        cols["mismatch"].append(row.mismatch)
        cols["layer_of"].append(row.layer_of)
        cols["layer"].append(row.layer)
    for sparse in ("aliases", "note", "mismatch", "layer_of", "layer"):  # empty for every row: bytes that say nothing
        if all(v is None for v in cols[sparse]):
            del cols[sparse]
    return {"nodes": table.columns(), "rows": cols, "tables": tables.tables}


def stat_columns(matrix: np.ndarray, precision: int) -> dict[str, list]:
    """One column per statistic (None where a row has none), rounded except the counts."""
    out = {}
    for j, name in enumerate(STAT_NAMES):
        column = matrix[:, j]
        if name.endswith("_count"):
            out[name] = [None if v != v else int(v) for v in column.tolist()]
        else:
            out[name] = _rounded_list(column, precision)
    return out


def _rounded_list(column: np.ndarray, digits: int) -> list:
    a = round_significant(column, digits)
    return [None if v != v else float(f"{v:.{digits}g}") for v in a.tolist()]
