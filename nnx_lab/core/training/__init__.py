"""What a training loop adds beside a model's rows (gradients, optimizer state, update ratio, logged
scalars, the NaN/Inf alert and stop), owned together by one :class:`Training`; see docs/ARCHITECTURE.md."""

from ._alert import NonfiniteAlert
from ._scalars import MAX_NAMES, ScalarStore
from ._series import GRAD, UPDATE, SeriesColumns, leaf_paths
from ._series_wire import series_buffer, series_meta
from ._stop import LastGood, NonFiniteStep, StepGuard
from ._training import Training

__all__ = [
    "GRAD",
    "LastGood",
    "NonFiniteStep",
    "StepGuard",
    "MAX_NAMES",
    "UPDATE",
    "NonfiniteAlert",
    "ScalarStore",
    "SeriesColumns",
    "Training",
    "leaf_paths",
    "series_buffer",
    "series_meta",
]
