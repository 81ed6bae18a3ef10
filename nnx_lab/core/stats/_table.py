"""The statistics of many arrays as columns, filled in as their device results arrive (see :mod:`._stats`)."""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np
from jax._src.core import ShardingTypeError  # refuses an operation on explicit mesh axes; not exported by jax

from ._kernels import STAT_NAMES

#: What a kernel launch or fetch may raise for one array, which becomes that array's StatsError: jax's
#: XlaRuntimeError and "Array has been deleted" (RuntimeError), a spec jax refuses (TypeError, ValueError,
#: ShardingTypeError). Anything else is a bug and propagates.
KERNEL_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, TypeError, ValueError, ShardingTypeError)


class StatsError(Exception):
    """A statistic could not be computed for one array; the message says why. ``deleted``: the
    array's buffer had been deleted or donated."""

    def __init__(self, message: str, deleted: bool = False):
        super().__init__(message)
        self.deleted = deleted


class _TablePlan(Protocol):
    """What a StatsTable reads of its launch plan (``_plan.LaunchPlan``, or a :class:`_PlanPart` of one)."""

    @property
    def errors(self) -> Sequence[tuple[int, StatsError]]: ...

    @property
    def sizes(self) -> np.ndarray: ...  # per array: its elements

    @property
    def has(self) -> np.ndarray: ...  # per array and statistic: whether its dtype has it

    @property
    def stat_columns(self) -> list[tuple[int, ...]]: ...  # per array: the columns of its statistics


class StatsTable:
    """The statistics of n arrays as columns, filled in as their results arrive.

    ``errors`` maps an array to its :class:`StatsError`; an array with no kernel call (empty) has
    no statistics. :meth:`matrix` gives every statistic as float64 columns (NaN: none), :meth:`dicts`
    one dict per array (the statistics its dtype has; None for a value that is not there)."""

    def __init__(self, n: int, plan: _TablePlan):
        # plan: the _stats.LaunchPlan (errors, sizes, which statistics each array has)
        self.n = n
        self._floats = np.full((n, 6), np.nan)
        self._counts = np.zeros((n, 4), np.int64)
        self._filled = np.zeros(n, bool)
        self._exact: dict[int, tuple[int, int]] = {}
        self.errors: dict = dict(plan.errors)  # array -> its StatsError
        self._plan = plan
        self._matrix: np.ndarray | None = None

    def put(self, rows: Sequence[int] | np.ndarray, floats: np.ndarray, counts: np.ndarray, exact: dict) -> None:
        self._floats[rows] = floats
        self._counts[rows] = counts
        self._filled[rows] = True
        for k, (lo, hi) in exact.items():
            self._exact[int(rows[k])] = (int(lo), int(hi))
        self._matrix = None

    def mean_min_max(self, rows: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """float64 mean, min and max of ``rows`` (NaN: not there), read without building the matrix."""
        f = self._floats[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            return np.ldexp(f[:, 0], self._counts[rows, 3]), f[:, 2], f[:, 3]

    def nonfinite(self, rows: Sequence[int] | np.ndarray) -> list[int]:
        """Positions (in ``rows``) whose mean, std, min or max came back non-finite."""
        return np.flatnonzero(~np.isfinite(self._floats[rows, :4]).all(axis=1)).tolist()

    def matrix(self) -> np.ndarray:
        """``float64[n, len(STAT_NAMES)]``: every array's statistics, NaN where it has none."""
        if self._matrix is None:
            f, c = self._floats, self._counts
            e = c[:, 3]
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                m = np.stack(
                    [
                        np.ldexp(f[:, 0], e),
                        np.ldexp(f[:, 1], e),
                        f[:, 2],
                        f[:, 3],
                        np.ldexp(f[:, 4], e),
                        f[:, 5],
                        c[:, 0],
                        c[:, 1],
                        c[:, 2] / self._plan.sizes,
                    ],
                    axis=1,
                )
            for i, (lo, hi) in self._exact.items():
                m[i, 2], m[i, 3] = lo, hi
            m[~(self._plan.has & self._filled[:, None])] = np.nan
            if self.errors:
                m[list(self.errors)] = np.nan
            self._matrix = m
        return self._matrix

    def split(self, n: int) -> tuple[StatsTable, StatsTable]:
        """The first ``n`` arrays' table and the rest's (a refresh's parameters and its series)."""
        return self._part(slice(0, n)), self._part(slice(n, self.n))

    def _part(self, part: slice) -> StatsTable:
        start, stop, _ = part.indices(self.n)
        plan = _PlanPart(self._plan, part, start, stop)
        t = StatsTable(stop - start, plan)
        t._floats, t._counts, t._filled = self._floats[part], self._counts[part], self._filled[part]
        t._exact = {i - start: v for i, v in self._exact.items() if start <= i < stop}
        t.errors = {i - start: e for i, e in self.errors.items() if start <= i < stop}
        return t

    def dicts(self) -> list:
        m = self.matrix().tolist()
        return [self.dict_of(i, m[i]) for i in range(self.n)]

    def dict_of(self, i: int, values: list | None = None) -> dict[str, float | int | None] | StatsError | None:
        """Array ``i``'s statistics as a dict (None: it has none; a StatsError: they failed)."""
        if i in self.errors:
            return self.errors[i]
        if not self._filled[i]:
            return None
        row: list = self.matrix()[i].tolist() if values is None else values
        stats = {}
        for j in self._plan.stat_columns[i]:
            v = row[j]
            stats[STAT_NAMES[j]] = None if v != v else (int(v) if j in (6, 7) else v)
        if i in self._exact and "min" in stats:  # an integer array's extremes, exactly (not a bool's)
            stats["min"], stats["max"] = self._exact[i]
        return stats


class _PlanPart:
    """What a StatsTable reads of a launch plan, for some of its arrays."""

    def __init__(self, plan: _TablePlan, part: slice, start: int, stop: int):
        self.errors = [(i - start, e) for i, e in plan.errors if start <= i < stop]
        self.sizes, self.has, self.stat_columns = plan.sizes[part], plan.has[part], plan.stat_columns[part]
