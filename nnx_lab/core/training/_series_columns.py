"""What one refresh knows of its series (gradients, optimizer state, updates), as host numbers: the
names and statistics the viewer shows beside the rows (see ``_series.py``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..stats import STAT_NAMES

__all__ = ["GRAD", "MAX_UNMATCHED", "UPDATE", "SeriesColumns"]

GRAD = "grad"
UPDATE = "update"
NORM = STAT_NAMES.index("norm")
MAX = STAT_NAMES.index("max")
COUNTS = [STAT_NAMES.index("nan_count"), STAT_NAMES.index("inf_count")]  # never rounded
#: unmatched leaves of one tree reduced and listed; the others are counted (``unmatched_more``)
MAX_UNMATCHED = 200


@dataclasses.dataclass
class SeriesColumns:
    """What one refresh knows of its series, as host numbers (no array).

    ``matrices[name]``: ``float64[rows, STAT_NAMES]`` (NaN: that row has none); ``steps[name]``:
    the step (tick count) its arrays are from; ``stale``: names carried over from an earlier
    refresh, ``since[name]`` what came after (``"none since"`` only when nothing newer was logged
    or computed); ``unmatched``: ``(series, path text, what, statistics or None)`` per leaf matched to
    no row; ``problems``: one line each (bad input); ``opt_step``: the optimizer's step count."""

    names: tuple[str, ...] = ()
    matrices: dict = dataclasses.field(default_factory=dict)
    steps: dict = dataclasses.field(default_factory=dict)
    stale: frozenset = frozenset()
    unmatched: list = dataclasses.field(default_factory=list)
    problems: list = dataclasses.field(default_factory=list)
    opt_step: int | None = None
    ratios: dict = dataclasses.field(default_factory=dict)  # name -> ratio per row, where known exactly
    waiting: bool = False  # some series left out while their program compiles: the last ones are kept
    unmatched_more: int = 0  # unmatched leaves beyond those listed: counted, not reduced
    since: dict = dataclasses.field(default_factory=dict)  # stale name -> what came after its step ("none since")

    def ratio(self, name: str, param_norm: np.ndarray) -> np.ndarray:
        """``‖series‖ / ‖θ‖`` per row (NaN where either is missing or ‖θ‖ is 0); the automatic
        update's is ``‖θₜ − θₜ₋₁‖ / ‖θₜ₋₁‖``, exactly."""
        if name in self.ratios:
            return self.ratios[name]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = self.matrices[name][:, NORM] / param_norm
        r[~np.isfinite(r)] = np.nan
        return r

    def stats_dict(self, name: str, row: int) -> dict:
        """Row ``row``'s statistics of series ``name`` (None where missing)."""
        values = self.matrices[name][row].tolist()
        return {s: (None if v != v else v) for s, v in zip(STAT_NAMES, values)}
