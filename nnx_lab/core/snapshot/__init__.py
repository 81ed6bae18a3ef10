"""Snapshots: describe every Variable of a model and reduce its arrays where they live.

The public face of the snapshot pipeline (see docs/ARCHITECTURE.md):

- :func:`snapshot` / :class:`PendingSnapshot` (``_snapshot.py``): walk, describe, launch the
  statistics, and fetch their few numbers (a :class:`Snapshot` of :class:`Row` objects).
- the statistics (``_stats.py``, kernels in ``_kernels.py``, one program per structure in
  ``_programs.py``), placement and sharding text (``_devices.py``), histograms (``_histogram.py``);
- series beside the rows (``_series.py``): gradients and optimizer state matched by path;
- stacked layers (``_layers.py``): one row per layer of a Variable with a layer axis;
- :class:`Watcher` (``_watch.py``), the throttled asynchronous refresh behind every live viewer,
  its :class:`History` (``_history.py``), the scalars logged by the loop (:class:`ScalarStore`,
  ``_scalars.py``), the NaN/Inf alert (:class:`NonfiniteAlert`, ``_alert.py``) and what it watches,
  resolved at every refresh (``_target.py``: an object by weak reference, an ``nnx.split`` pair, or a
  :class:`NameTarget`).

>>> from flax import nnx
>>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
>>> [row.path for row in snap.rows], snap["kernel"].shape
([('bias',), ('kernel',)], (2, 3))
"""

from ..render import sparkline  # drawn as text with the other renderings; exported here as before
from ._alert import NonfiniteAlert
from ._devices import device_summary
from ._histogram import DEFAULT_BINS, histograms_dispatch, histograms_fetch
from ._history import HISTORY_STATS, History
from ._layers import LAYER_NAMES, LayerError, LayerKey, parse_layer_option, parse_layers, stacked_modules
from ._scalars import MAX_POINTS, ScalarStore
from ._series import GRAD, UPDATE, SeriesColumns, SeriesStore, leaf_paths
from ._series_wire import series_buffer, series_meta
from ._snapshot import PRECISION, STATUSES, PendingSnapshot, Row, Snapshot, round_significant, snapshot
from ._stats import (
    STAT_NAMES,
    Deferred,
    StatsError,
    compute_stats,
    is_numeric_dtype,
    is_ready,
    kernel_cache_size,
    threads_see_jax_config,
)
from ._target import NameTarget, ObjectTarget, PairTarget, Target, watch_target
from ._throttle import Throttle
from ._watch import MAX_IN_FLIGHT, Watcher

__all__ = [
    "DEFAULT_BINS",
    "GRAD",
    "HISTORY_STATS",
    "LAYER_NAMES",
    "LayerError",
    "LayerKey",
    "MAX_IN_FLIGHT",
    "MAX_POINTS",
    "PRECISION",
    "STATUSES",
    "STAT_NAMES",
    "UPDATE",
    "Deferred",
    "History",
    "NameTarget",
    "NonfiniteAlert",
    "ObjectTarget",
    "PairTarget",
    "PendingSnapshot",
    "Row",
    "ScalarStore",
    "SeriesColumns",
    "SeriesStore",
    "Snapshot",
    "StatsError",
    "Target",
    "Throttle",
    "Watcher",
    "compute_stats",
    "device_summary",
    "histograms_dispatch",
    "histograms_fetch",
    "is_numeric_dtype",
    "is_ready",
    "kernel_cache_size",
    "leaf_paths",
    "parse_layer_option",
    "parse_layers",
    "round_significant",
    "series_buffer",
    "series_meta",
    "snapshot",
    "sparkline",
    "stacked_modules",
    "threads_see_jax_config",
    "watch_target",
]
