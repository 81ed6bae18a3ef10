"""The split report as data: per filter what it took (:class:`FilterResult`), per array which filter
took it (:class:`SplitRow`), and what the report says of them (:class:`SplitReport`)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from .. import render
from ..graph import Path, path_text
from ..snapshot import Row

__all__ = ["FilterResult", "SplitError", "SplitReport", "SplitRow"]


class SplitError(ValueError):
    """A filter or a split that cannot work as written; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class FilterResult:
    index: int
    label: str  # the filter as the user wrote it (or its repr)
    name: str  # the variable name the magic binds its State to by default
    paths: tuple[Path, ...]  # Variables this filter took
    count: int
    size: int
    bytes: int
    types: dict[str, int]
    shadowing: int  # Variables it took that a later filter matched too


@dataclasses.dataclass(frozen=True)
class SplitRow:
    row: Row
    taken_by: int | None  # index of the filter that took it; None: remainder
    matched_by: tuple[int, ...]  # every filter that matched it


@dataclasses.dataclass(frozen=True)
class SplitReport:
    root_type: str
    filters: tuple[FilterResult, ...]
    rows: tuple[SplitRow, ...]  # one per array: a Variable holding a tuple of arrays has several
    variable_count: int  # how many Variables (leaves of nnx.state) were split

    @property
    def remainder(self) -> tuple[SplitRow, ...]:
        return tuple(r for r in self.rows if r.taken_by is None)

    @property
    def exhaustive(self) -> bool:
        return not self.remainder

    @property
    def shadowed(self) -> tuple[SplitRow, ...]:
        return tuple(r for r in self.rows if len(r.matched_by) > 1)

    @property
    def unused(self) -> tuple[FilterResult, ...]:
        """Filters that took nothing."""
        return tuple(f for f in self.filters if f.count == 0)

    @property
    def shared(self) -> tuple[SplitRow, ...]:
        return tuple(r for r in self.rows if r.row.aliases)

    def code(self, target: str = "model", names: Sequence[str] | None = None) -> str:
        """The plain-Python ``nnx.split`` line that does this split."""
        names = list(names) if names else ["graphdef", *(f.name for f in self.filters)]
        filters = "".join(f", {f.label}" for f in self.filters)
        return f"{', '.join(names)} = nnx.split({target}{filters})"

    def problems(self) -> list[str]:
        """One line per thing a careful user would want to know before trusting the split."""
        lines = []
        for f in self.unused:
            lines.append(f"filter {f.index + 1} ({f.label}) took nothing")
        groups: dict[tuple[int, int], list[str]] = {}
        for r in self.shadowed:
            for later in r.matched_by[1:]:
                groups.setdefault((r.matched_by[0], later), []).append(r.row.path_text)  # (= taken_by)
        for (first, later), paths in groups.items():
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            lines.append(
                f"{len(paths)} Variable{'s' if len(paths) > 1 else ''} matched by "
                f"{self.filters[later].label} went to the earlier {self.filters[first].label} ({shown})"
            )
        if self.remainder:
            shown = ", ".join(r.row.path_text for r in self.remainder[:5])
            more = f" and {len(self.remainder) - 5} more" if len(self.remainder) > 5 else ""
            lines.append(
                f"not exhaustive: {len(self.remainder)} Variables matched no filter ({shown}{more}); "
                "add `...` as the last filter to collect them"
            )
        return lines

    def to_dict(self) -> dict:
        """Plain JSON-able data for the report widget."""
        return {
            "root_type": self.root_type,
            "filters": [
                {
                    "label": f.label,
                    "name": f.name,
                    "count": f.count,
                    "size": f.size,
                    "bytes": f.bytes,
                    "types": f.types,
                    "shadowing": f.shadowing,
                }
                for f in self.filters
            ],
            "rows": {
                "path": [r.row.path_text for r in self.rows],
                "type": [r.row.type for r in self.rows],
                "shape": [list(r.row.shape) if r.row.shape is not None else None for r in self.rows],
                "dtype": [r.row.dtype for r in self.rows],
                "nbytes": [r.row.nbytes for r in self.rows],
                "taken_by": [r.taken_by for r in self.rows],
                "matched_by": [list(r.matched_by) for r in self.rows],
                "aliases": [[path_text(a) for a in r.row.aliases] for r in self.rows],
            },
            "problems": self.problems(),
        }

    def to_text(self, names: Sequence[str] | None = None) -> str:
        """Plain text; ``names``: the names bound (graphdef first), when not the default ones."""
        return render.split_text(self, names)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return render.split_html(self)

    def to_html(self, target: str = "model", names: Sequence[str] | None = None) -> str:
        return render.split_html(self, target=target, names=names)
