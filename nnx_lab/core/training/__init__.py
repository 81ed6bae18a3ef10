"""What a training loop adds beside a model's rows: gradients and optimizer state matched to the
Variables by path (``_series.py``, ``_series_match.py``; sent to the browser by ``_series_wire.py``),
the update ratio ‖θₜ − θₜ₋₁‖/‖θₜ₋₁‖ (``_updates.py``), logged scalars (``_scalars.py``) and the
NaN/Inf alert (``_alert.py``) and the loop's stop at a non-finite step (``_stop.py``), owned together by one :class:`Training` (``_training.py``)."""

from ._alert import NonfiniteAlert
from ._scalars import MAX_NAMES, MAX_POINTS, ScalarStore
from ._series import GRAD, UPDATE, SeriesColumns, SeriesStore, is_optimizer, leaf_paths
from ._series_wire import series_buffer, series_meta
from ._stop import LastGood, NonFiniteStep, StepGuard
from ._training import Training

__all__ = [
    "GRAD",
    "LastGood",
    "NonFiniteStep",
    "StepGuard",
    "MAX_NAMES",
    "MAX_POINTS",
    "UPDATE",
    "NonfiniteAlert",
    "ScalarStore",
    "SeriesColumns",
    "SeriesStore",
    "Training",
    "is_optimizer",
    "leaf_paths",
    "series_buffer",
    "series_meta",
]
