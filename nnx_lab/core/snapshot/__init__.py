"""Snapshots: describe every Variable of a model, with its arrays' statistics from ``core.stats``.

- :func:`snapshot` / :class:`PendingSnapshot` (``_snapshot.py``): walk, describe, launch the
  statistics, and fetch their few numbers (a :class:`Snapshot` of :class:`Row` objects);
- a Variable described without reading its data (``_describe.py``), placement and sharding text
  (``_devices.py``), a model's structure walked once and reused (``_structure.py``), stacked layers
  (``_layers.py``: one row per layer of a Variable with a layer axis) and the browser's payload
  (``_payload.py``).

Live refreshing is :class:`~nnx_lab.core.watcher.Watcher`; the statistics engine is ``core.stats``.

>>> from flax import nnx
>>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
>>> [row.path for row in snap.rows], snap["kernel"].shape
([('bias',), ('kernel',)], (2, 3))
"""

from ._devices import device_summary
from ._layers import LAYER_NAMES, LayerError, LayerKey, parse_layer_option, parse_layers, stacked_modules
from ._snapshot import PRECISION, STATUSES, PendingSnapshot, Row, Snapshot, round_significant, snapshot

__all__ = [
    "LAYER_NAMES",
    "PRECISION",
    "STATUSES",
    "LayerError",
    "LayerKey",
    "PendingSnapshot",
    "Row",
    "Snapshot",
    "device_summary",
    "parse_layer_option",
    "parse_layers",
    "round_significant",
    "snapshot",
    "stacked_modules",
]

# Moved in the split of issue 26 (core.stats, core.live, core.training, core.watcher): still found
# here while code written against the old layout is updated. Resolved lazily (no import cycle).
_MOVED = {
    **dict.fromkeys(
        [
            "DEFAULT_BINS",
            "STAT_NAMES",
            "Deferred",
            "StatsError",
            "compute_stats",
            "histograms_dispatch",
            "histograms_fetch",
            "is_numeric_dtype",
            "is_ready",
            "kernel_cache_size",
            "threads_see_jax_config",
        ],
        "stats",
    ),
    **dict.fromkeys(
        ["HISTORY_STATS", "History", "NameTarget", "ObjectTarget", "PairTarget", "Target", "Throttle", "watch_target"],
        "live",
    ),
    **dict.fromkeys(
        [
            "GRAD",
            "MAX_POINTS",
            "UPDATE",
            "NonfiniteAlert",
            "ScalarStore",
            "SeriesColumns",
            "SeriesStore",
            "leaf_paths",
            "series_buffer",
            "series_meta",
        ],
        "training",
    ),
    **dict.fromkeys(["MAX_IN_FLIGHT", "Watcher"], "watcher"),
}


def __getattr__(name):
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"nnx_lab.core.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
