"""The device statistics engine: arrays in, a table of statistics out, computed where they live.

It knows nothing of models, rows or paths (``core.snapshot`` describes a model and hands its arrays
here). Per array: count, mean, std, min, max, NaN/Inf counts and norms from one compiled reduction
(``_kernels.py``); a viewer's repeated refreshes of one structure run as one compiled program
(``_programs.py``, launched per chunk as ``_plan.py`` works out, one pass where its check allows:
``_one_pass.py``), kept on disk between sessions (``_executables.py``, ``_cache_store.py``); arrays
sharded over several devices are reduced shard by shard without a collective (``_shards.py``);
their few numbers reach the host asynchronously (``_transfer.py``) into a :class:`StatsTable`
(``_table.py``). Histograms: ``_histogram.py``. Stacked layers' kernels: ``_layered.py``.
"""

from ._compiling import in_background
from ._executables import compile_program
from ._histogram import DEFAULT_BINS, histograms_dispatch, histograms_fetch, histograms_prepare
from ._inflight import devices_busy
from ._stats import (
    STAT_NAMES,
    Deferred,
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
