"""Series beside a model's rows: gradients and optimizer state, matched to its Variables by path
(docs/guide/training.md says how a leaf matches and what it costs).

A logged tree is held by reference until its step's tick: a refresh there reduces its arrays with
the parameters in the same program; a throttled tick drops it, so a gradient is never held past
its step. A refresh without gradients keeps the last statistics, marked stale. Leaves that match no
row are listed, the first :data:`MAX_UNMATCHED` of each tree, the others counted. Matching:
:mod:`._series_match`; one refresh's leaves: :mod:`._series_dispatch`; its numbers:
:mod:`._series_columns`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from flax import nnx

from ..live import OptimizerSource
from ..stats import STAT_NAMES
from ._series_columns import GRAD, MAX_UNMATCHED, NORM, UPDATE, SeriesColumns
from ._series_dispatch import SeriesDispatch
from ._series_match import leaf_paths
from ._updates import UpdateTracker

__all__ = ["GRAD", "MAX_UNMATCHED", "UPDATE", "SeriesColumns", "SeriesStore", "is_optimizer", "leaf_paths"]


class SeriesStore:
    """A Watcher's series: the gradients logged for the current step and the optimizer, and what
    the last published refresh knew (to keep gradient statistics, marked stale, over refreshes
    that had none)."""

    def __init__(self, optimizer: object = None, *, state: bool = True, updates: bool = True):
        # state=False: the optimizer is the watched object itself (its state is already its rows):
        # only its step count is added.
        # optimizer: an object (held weakly) or a NameTarget followed at every refresh (a TypeError
        # here for an object that is no optimizer)
        self._optimizer = None if optimizer is None else OptimizerSource(optimizer)
        self._state = state
        self.updates = UpdateTracker(updates)  # ‖θₜ − θₜ₋₁‖ from a tick's refresh to the next tick
        self._given_updates: Any = None
        self._grads: Any = None
        self._grads_step: int | None = None
        self._update_steps: list[int] = []  # the steps of the last automatic update ratios that arrived
        self.layouts: dict = {}
        self.last: SeriesColumns | None = None
        # What the latest refresh given each input ("grads", "optimizer state") found wrong with it:
        # shown in the status even when that refresh was skipped (a program compiling), kept until
        # that input is given again.
        self.problems: dict[str, list[str]] = {}

    @property
    def optimizer(self) -> nnx.Optimizer | None:
        if self._optimizer is None:
            return None
        obj = self._optimizer.resolve()
        if self._optimizer.name is not None:  # a followed name: what it holds now, said until it holds an optimizer
            self.problems["optimizer"] = [f"optimizer: {self._optimizer.problem}"] if obj is None else []
        return obj

    @property
    def optimizer_name(self) -> str | None:
        """The optimizer's name when it is followed (looked up at every refresh), else None."""
        return None if self._optimizer is None else self._optimizer.name

    def log(self, step: int, grads: Any = None, updates: Any = None) -> None:
        """Keep ``grads`` / ``updates`` (by reference: no copy, no sync) for this step's refresh."""
        if grads is not None:
            self._grads, self._grads_step = grads, step
        if updates is not None:
            self._given_updates, self._grads_step = updates, step

    def take(self, step: int, tick: bool = False) -> SeriesDispatch | None:
        """This refresh's series (None: nothing to add), taking what was logged. ``tick``: dispatched
        by a tick (its parameters are held for the update ratio); any other refresh (a loop's or
        cell's end) releases what is held."""
        grads, updates, optimizer = self._grads, self._given_updates, self.optimizer
        self._grads = self._given_updates = None
        hold = tick and self.updates.enabled
        if not tick:
            self.updates.release()
        if grads is None and updates is None and optimizer is None and self.last is None and not hold:
            return None
        return SeriesDispatch(self, grads, self._grads_step, optimizer, step, self._state, updates, hold)

    def published(self, columns: SeriesColumns | None, n_rows: int, step: int | None = None) -> SeriesColumns | None:
        """What a published snapshot shows: ``columns`` plus the last gradient statistics (stale)
        when this refresh had none and the rows are the same; ``step``: the refresh's (ticks so far)."""
        if columns is None:
            columns = SeriesColumns()
        arrived = self.updates.collect(n_rows)
        if arrived is not None and UPDATE not in columns.matrices:  # given updates come first
            norm, ratio, at = arrived
            self._update_steps = [*self._update_steps[-7:], at]
            m = np.full((n_rows, len(STAT_NAMES)), np.nan)
            m[:, NORM] = norm
            columns = dataclasses.replace(
                columns,
                names=(*columns.names, UPDATE),
                matrices={**columns.matrices, UPDATE: m},
                steps={**columns.steps, UPDATE: at},
                ratios={**columns.ratios, UPDATE: ratio},
            )
        self.problems["update"] = [self.updates.problem] if self.updates.problem else []
        last = self.last
        if last is not None:  # a refresh without gradients (updates) keeps the last ones' unmatched leaves too
            given = (
                {entry[0] for entry in columns.unmatched}
                | {p.split(":", 1)[0] for p in columns.problems}
                | {source for source, name in (("grads", GRAD), ("updates", UPDATE)) if name in columns.names}
            )
            kept = [entry for entry in last.unmatched if entry[0] in ("grads", "updates") and entry[0] not in given]
            if kept:
                columns = dataclasses.replace(columns, unmatched=[*columns.unmatched, *kept])
        # kept from an earlier refresh, marked stale: the gradients and updates of a refresh that had none,
        # and every series a refresh left out while its program compiles
        carried = (*(last.names if last is not None and columns.waiting else ()), GRAD, UPDATE)
        if columns.waiting and columns.opt_step is None and last is not None:
            columns = dataclasses.replace(columns, opt_step=last.opt_step)
        for name in dict.fromkeys(carried):
            if (
                name not in columns.matrices
                and last is not None
                and name in last.matrices
                and last.matrices[name].shape[0] == n_rows
            ):
                columns = dataclasses.replace(
                    columns,
                    names=(*columns.names, name),
                    matrices={**columns.matrices, name: last.matrices[name]},
                    steps={**columns.steps, name: last.steps[name]},
                    stale=columns.stale | {name},
                    ratios={**columns.ratios, **({name: last.ratios[name]} if name in last.ratios else {})},
                )
        if columns.stale:
            since = {name: self._since(name, columns.steps.get(name), step) for name in columns.stale}
            columns = dataclasses.replace(columns, since=since)
        order = {GRAD: 0, UPDATE: 2}
        columns = dataclasses.replace(columns, names=tuple(sorted(columns.names, key=lambda n: order.get(n, 1))))
        self.last = (
            columns if columns.names or columns.unmatched or columns.problems or columns.opt_step is not None else None
        )
        return self.last

    def _since(self, name: str, at: int | None, step: int | None) -> str:
        """What came after a stale series' step ``at``: "none since" only when nothing newer was
        could have been computed since (the automatic update ratio: at the step after a tick's refresh
        only; a loop's last logged gradients and given updates reach the refresh after it)."""
        if name == UPDATE and isinstance(at, int) and step is not None and step > at:
            return f"computed at the step after a refresh only{_every(self._update_steps)}"
        return "none since"


def _every(steps: list[int]) -> str:
    """How often the update ratio arrived: ", every 50 steps" / ", about every 48 steps" ("" unknown)."""
    gaps = [b - a for a, b in zip(steps, steps[1:]) if b > a][-2:]  # the latest: a loop's own pace
    if not gaps:
        return ""
    if gaps[-1] == 1:
        return ", every step" if len(set(gaps)) == 1 else ""
    return f", {'every' if len(set(gaps)) == 1 else 'about every'} {gaps[-1]:,} steps"


def is_optimizer(obj: object) -> bool:
    """Whether ``obj`` is an ``nnx.Optimizer`` (what ``watch(model, optimizer=...)`` takes)."""
    return isinstance(obj, nnx.Optimizer)
