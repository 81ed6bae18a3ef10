"""The device statistics engine: arrays in, a table of statistics out, computed where they live.

It knows nothing of models, rows or paths (``core.snapshot`` describes a model and hands its arrays
here). Which module does what: docs/ARCHITECTURE.md ("Where to look").
"""

from ._compiling import in_background
from ._executables import compile_program
from ._histogram import DEFAULT_BINS, histograms_dispatch, histograms_fetch, histograms_prepare
from ._inflight import devices_busy
from ._stats import (
    STAT_NAMES,
    Deferred,
    LaunchPlan,
    PendingStats,
    StatsError,
    StatsTable,
    compiling,
    compute_stats,
    is_numeric_dtype,
    is_ready,
    kernel_cache_size,
    threads_see_jax_config,
)

__all__ = [
    "DEFAULT_BINS",
    "STAT_NAMES",
    "Deferred",
    "LaunchPlan",
    "PendingStats",
    "StatsError",
    "StatsTable",
    "compile_program",
    "compiling",
    "compute_stats",
    "devices_busy",
    "histograms_dispatch",
    "histograms_fetch",
    "histograms_prepare",
    "in_background",
    "is_numeric_dtype",
    "is_ready",
    "kernel_cache_size",
    "threads_see_jax_config",
]
