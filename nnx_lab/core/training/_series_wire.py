"""The series beside a snapshot's rows (:mod:`._series`) as a viewer sends them: a little JSON and one
float32 buffer, ``[series, STAT_NAMES + ratio, rows]``, rounded as the statistics are."""

from __future__ import annotations

import numpy as np

from ..render import round_significant
from ..stats import STAT_NAMES
from ._series_columns import COUNTS, MAX_UNMATCHED, SeriesColumns

__all__ = ["series_buffer", "series_meta"]


def series_meta(columns: SeriesColumns | None, step: int) -> dict | None:
    """What a payload says of the series beside their numbers (None: no series). ``step``: the
    refresh's tick count, against which ``stale`` series are from an earlier step."""
    if columns is None:
        return None
    unmatched = []
    for series, text, what, stats in columns.unmatched[:MAX_UNMATCHED]:
        numbers = {k: stats[k] for k in ("mean", "max", "norm") if stats and stats.get(k) is not None}
        unmatched.append(
            {
                "series": series,
                "path": text,
                "what": what,
                "stats": {k: float(round_significant(np.array(v), 4)) for k, v in numbers.items()},
            }
        )
    return {
        "names": list(columns.names),
        "stats": list(STAT_NAMES),
        "steps": columns.steps,
        "step": step,
        "stale": sorted(columns.stale),
        "since": {name: columns.since.get(name, "none since") for name in sorted(columns.stale)},
        "unmatched": unmatched,
        "unmatched_total": len(columns.unmatched) + columns.unmatched_more,
        "problems": list(columns.problems),
        "opt_step": columns.opt_step,
    }


def series_buffer(columns: SeriesColumns, param_norm: np.ndarray, precision: int) -> tuple[bytes, list]:
    """Every series' statistics and its ratio to the parameter's norm, rounded to ``precision``
    digits: ``float32[series, STAT_NAMES + ratio, rows]`` as bytes (NaN: none), and the exact values
    of the few numbers float32 would change (a gradient's norm beyond its range, counts beyond
    2**24) as ``[[series, stat, row, value], ...]`` (stat ``len(STAT_NAMES)``: the ratio), as
    :meth:`Snapshot.stats_buffer` does for the statistics."""
    rows = param_norm.shape[0]
    out = np.full((len(columns.names), len(STAT_NAMES) + 1, rows), np.nan, np.float32)
    exact: list = []
    for k, name in enumerate(columns.names):
        m = np.empty((rows, len(STAT_NAMES) + 1))
        m[:, : len(STAT_NAMES)] = round_significant(columns.matrices[name], precision)
        m[:, COUNTS] = columns.matrices[name][:, COUNTS]  # counts are never rounded
        m[:, len(STAT_NAMES)] = round_significant(columns.ratio(name, param_norm), precision)
        with np.errstate(invalid="ignore", over="ignore"):  # beyond float32: inf in the buffer, exact beside
            f32 = m.astype(np.float32)
            lost = (np.isfinite(m) & ~np.isfinite(f32)) | ((m != 0) & (f32 == 0))
            lost[:, COUNTS] |= m[:, COUNTS] > 2**24
        out[k] = f32.T
        exact.extend([k, int(j), int(r), float(m[r, j])] for r, j in zip(*np.nonzero(lost)))
    return out.tobytes(), exact
