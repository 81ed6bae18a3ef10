"""A training loop's side of a live view, in one object: the series beside the rows (gradients,
optimizer state, update ratio), the logged scalars and the NaN/Inf alert. The
:class:`~nnx_lab.core.watcher.Watcher` records into it at every step and reads it when a refresh is
dispatched and published.

>>> import jax.numpy as jnp
>>> training = Training(None)
>>> training.log(1, scalars={"loss": jnp.float32(0.5), "lr": "fast"})
>>> training.problems()
['lr: not a number (str); not recorded']
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from ._alert import NonfiniteAlert
from ._scalars import ScalarStore
from ._series import SeriesStore, is_optimizer

if TYPE_CHECKING:
    from ..snapshot import Snapshot
    from ._updates import Described

__all__ = ["Training"]
logger = logging.getLogger("nnx_lab")


class Training:
    """``obj``: what is watched (an ``nnx.Optimizer`` watched alone is its own optimizer: its state
    is its rows, only its step count is added); ``optimizer``: the one whose state goes beside the rows
    (an object or a followed name; a TypeError for something else); ``updates``: compute the update
    ratio ‖θₜ − θₜ₋₁‖/‖θₜ₋₁‖ (holds one step's parameters after a tick's refresh)."""

    def __init__(self, obj: object, optimizer: object = None, *, updates: bool = True):
        if optimizer is None and is_optimizer(obj):
            self.series = SeriesStore(obj, state=False, updates=updates)
        else:
            self.series = SeriesStore(optimizer, updates=updates)
        self.scalars = ScalarStore()  # read when a refresh is published
        self.alert = NonfiniteAlert()  # the first NaN/Inf seen (step, refresh, where), kept until cleared

    def log(self, step: int, grads: Any = None, updates: Any = None, scalars: dict | None = None) -> None:
        """Record for ``step`` (never raises: bad input is a problem the status shows)."""
        if scalars:
            self.scalars.log(step, scalars)
        if grads is not None or updates is not None:
            self.series.log(step, grads, updates)

    def advance_updates(self, rows: Callable[[], Described | None], step: int) -> None:
        """The step after a tick's refresh: launch ‖θₜ − θₜ₋₁‖ on the device. ``rows()``: the model's
        rows now, as a refresh has them (None: the model is gone)."""
        if not self.series.updates.holding:
            return
        try:
            described = rows()
            if described is not None:
                self.series.updates.advance(described, step)
        except Exception:  # noqa: BLE001 - a boundary (the loop's step): the refresh that follows says what is odd
            logger.debug("nnx_lab: the update ratio could not advance", exc_info=True)
            self.series.updates.release()

    def published(self, snap: Snapshot, *, refresh: int, step: int, wait: bool) -> None:
        """A refresh was published: read the scalars that have arrived (all of them, waiting, with
        ``wait``) and let the alert look at the snapshot and the scalars."""
        self.scalars.collect(wait=wait)
        scalar, now = self.scalars.take_nonfinite(), self.scalars.nonfinite_now()
        self.alert.observe(snap, refresh=refresh, step=step, scalar=scalar, scalars_now=now)

    def label(self, target: str) -> str:
        """What the status line says is watched: "following `model` and its optimizer `opt`"."""
        name = self.series.optimizer_name
        if name is None:
            return target
        return f"{target} and its optimizer `{name}`" if target else f"following optimizer `{name}`"

    def problems(self) -> list[str]:
        """What the status line says of bad input: the scalars', then the series' first two."""
        series = [p for problems in self.series.problems.values() for p in problems][:2]
        return [p for p in (self.scalars.problem, *series) if p]
