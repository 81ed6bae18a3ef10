"""A launch's device results for some arrays: one program launch for a chunk of a plan, or one kernel
call, read back as the statistics table's columns (see :mod:`._stats`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._one_pass import finish_rows
from ._plan import LaunchPlan
from ._programs import Program

if TYPE_CHECKING:
    from ._table import StatsError
    from ._types import HostOutputs, Outputs


class Batch:
    """Device results for some arrays (their positions among a plan's calls): one program launch
    for the plan's chunk ``chunk``, or one kernel call (or its StatsError) for one, or one grouped launch (:mod:`._grouped`) for several."""

    def __init__(
        self,
        outputs: Outputs | StatsError,
        members: list[int],
        program: Program | None = None,
        chunk: int | None = None,
        guesses: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ):
        self.outputs, self.members, self.program, self.chunk = outputs, members, program, chunk
        self.guesses = guesses  # a program's one-pass arrays: (calls, shifts, known) the launch used
        self.redo: list[int] = []  # calls whose one-pass result failed its check (set by columns)

    def rows(self, plan: LaunchPlan) -> np.ndarray:
        """The table rows these results fill, in order."""
        if self.chunk is not None:
            return plan.chunk_rows[self.chunk]
        return np.asarray(plan.rows(self.members), np.intp)

    def owner(self, plan: LaunchPlan, k: int) -> int:
        """The call (position in the plan's calls) that fills the k-th of :meth:`rows`."""
        if self.chunk is None:  # one call (a layered one fills a row per layer), or a grouped launch: a row each
            return self.members[0] if len(self.members) == 1 else self.members[k]
        return int(plan.owners(self.chunk)[k])

    def columns(self, host: HostOutputs, plan: LaunchPlan) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[int, int]]]:
        """(floats [k, 6], counts [k, 4], {position: exact integer extremes}) from the fetched outputs."""
        if self.program is not None:
            floats, counts, exact = self.program.columns(host)
            if self.guesses is not None:
                calls, shifts, known = self.guesses
                sizes = plan.sizes[[plan.index[m] for m in calls]]
                self.redo = calls[
                    finish_rows(floats, counts, self.program.one_pass_rows, shifts, known, sizes)
                ].tolist()
            return floats, counts, exact
        floats, counts, *exact = host  # one array's ([6], [4], [2]) or, mapped over its layers, ([L, 6], ...)
        exact = dict(enumerate(map(tuple, exact[0].reshape(-1, 2).tolist()))) if exact else {}
        return floats.reshape(-1, 6), counts.reshape(-1, 4), exact
