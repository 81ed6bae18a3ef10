"""Histograms computed where the arrays live: only ``bins + 2`` numbers per array reach the host.

Each array gets ``bins`` equal bins between its finite minimum and maximum (NaN/Inf are left
out; the statistics count them). A single-device array goes through a kernel compiled once per
shape (kept on disk between sessions); a sharded array through jax's own dispatch, shard by shard.
All are dispatched first and fetched together in one ``jax.device_get``.

>>> import jax.numpy as jnp
>>> histograms_fetch(histograms_dispatch([jnp.array([0.0, 1.0, 1.0, 3.0, jnp.nan])], bins=3))
[[0.0, 3.0, 1, 2, 1]]
>>> from nnx_lab.core.render import sparkline  # a histogram row drawn as text
>>> sparkline([0.0, 3.0, 1, 2, 0, 4])
'▂▄ █'
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import MAX_BINS, check_number
from ..compat import outside_context_mesh
from ..render import DIGITS as PRECISION
from ..render import round_significant
from ._compiling import kernel_options
from ._executables import compile_program
from ._stats import is_numeric_dtype

if TYPE_CHECKING:
    from ._executables import Executable

    Histogram = tuple[jax.Array, jax.Array]  # one array's [lo, hi] and bin counts, on its device(s)

_log = logging.getLogger("nnx_lab")

#: Bins of the per-array histogram.
DEFAULT_BINS = 16


def _hist(x, bins, scatter):
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        x = jnp.abs(x)
    x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    finite = jnp.isfinite(x)
    lo = jnp.min(jnp.where(finite, x, jnp.inf))
    hi = jnp.max(jnp.where(finite, x, -jnp.inf))
    width = hi - lo
    scale = jnp.where(width > 0, bins / jnp.where(width > 0, width, 1), 0)
    index = jnp.clip(jnp.floor((x - lo) * scale), 0, bins - 1).astype(jnp.int32)
    if scatter:
        # One pass of scatter-adds: the fastest form on one CPU device (~7x the reduction below).
        index = jnp.where(finite, index, bins).reshape(-1)
        counts = jnp.bincount(index, length=bins + 1)[:bins].astype(jnp.int32)
    else:
        # A reduction over a broadcast compare: fuses on GPU/TPU (no atomics on 16 addresses) and
        # runs shard by shard on a sharded array, with one small all-reduce; nothing is gathered.
        index = jnp.where(finite, index, -1)
        counts = jnp.sum(
            index[..., None] == jnp.arange(bins, dtype=jnp.int32), axis=tuple(range(x.ndim)), dtype=jnp.int32
        )
    return jnp.stack([lo, hi]).astype(jnp.float32), counts


_hist_kernel = jax.jit(_hist, static_argnums=(1, 2))


def _hist_flat(x, bins, scatter):
    # Flattened first (free for a single-device array): XLA compiles a 1-D reduction in about half the
    # time of the same over 4 axes.
    return _hist(x.reshape(-1), bins, scatter)


_hist_flat_kernel = jax.jit(_hist_flat, static_argnums=(1, 2))

# One compiled kernel per distinct (shape, dtype, device, bins), not one program over all arrays: a
# capture's activations repeat a few shapes (flax's U-Net: 85 arrays, 14 shapes; the 14 kernels compiled
# in about 2 s, one program in 3-6 s). Kept on disk like the statistics' programs.
#: Arrays of up to this many elements get XLA's fast-compiling CPU options (optimisation level 0:
#: ~0.07 s a compile instead of ~0.15-0.3 s; 10^6 values counted in ~28 ms instead of ~13 ms).
FAST_COMPILE_ELEMENTS = 1 << 20
MAX_KERNELS = 256  # compiled histogram kernels kept in this process (the least recently used go)
_kernels: OrderedDict[tuple, Executable] = OrderedDict()  # (shape, dtype, sharding, bins, scatter) -> kernel
_kernels_lock = threading.Lock()


def _compiled_kernel(x: jax.Array, bins: int, scatter: bool) -> Executable:
    """The compiled histogram of an array like ``x`` (one device or several): from this process, the disk
    (single-device ones), or compiled."""
    key = (x.shape, x.dtype, x.sharding, bins, scatter)
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is not None:
            _kernels.move_to_end(key)
            return kernel
    # flattened unless its sharding names mesh axes (one device of an explicit-axes mesh): jax
    # refuses to reshape those without an output sharding
    flat = isinstance(x.sharding, jax.sharding.SingleDeviceSharding)
    with outside_context_mesh():  # the user's jax.set_mesh would refuse one device's array
        lowered = (_hist_flat_kernel if flat else _hist_kernel).lower(x, bins, scatter)
    kernel = compile_program(lowered, kernel_options(x, FAST_COMPILE_ELEMENTS), [x])
    with _kernels_lock:
        _kernels[key] = kernel
        while len(_kernels) > MAX_KERNELS:
            _kernels.popitem(last=False)
    return kernel


def _use_scatter(x: jax.Array | np.ndarray) -> bool:
    """bincount on a single CPU device; the fused reduction on accelerators and sharded arrays (and on
    one device of a mesh with explicit axes: jax refuses to flatten those for the bincount)."""
    if not isinstance(x, jax.Array):
        return jax.default_backend() == "cpu"
    sharding = x.sharding
    return isinstance(sharding, jax.sharding.SingleDeviceSharding) and next(iter(sharding.device_set)).platform == "cpu"


#: Histogram kernels over several devices (each with an all-reduce) in flight at once, at most.
MAX_SPANNING_IN_FLIGHT = 8


def _compilable(x: object) -> bool:
    """Whether ``x`` is a live numeric array of this process alone, on one device or several (reduced
    by a kernel of :func:`_compiled_kernel`, compiled beforehand on a thread where the caller says so:
    an array sharded over a mesh got jax's own dispatch, compiled on the caller's thread at XLA's
    slowest options, 3 of a miniGPT capture's 9 s on 2 devices)."""
    try:
        return (
            isinstance(x, jax.Array)
            and bool(x.size)
            and is_numeric_dtype(x.dtype)
            and (len(x.sharding.device_set) == 1 or (x.is_fully_addressable and jax.process_count() == 1))
            and not x.is_deleted()
        )
    except (AttributeError, RuntimeError, TypeError):  # a host value, a deleted array: the other path
        return False


def histograms_prepare(arrays: Sequence[Any], bins: int = DEFAULT_BINS) -> None:
    """Compile (or load) the kernels :func:`histograms_dispatch` will launch for ``arrays``, launching
    nothing and touching no other device: safe on a thread of its own while the caller compiles
    something else (a capture's statistics), where the two compiles share the CPU's cores."""
    bins = check_number(bins, "bins", 1, MAX_BINS, integer=True)
    for x in arrays:
        if _compilable(x):
            try:
                _compiled_kernel(x, bins, _use_scatter(x))
            except (RuntimeError, TypeError, ValueError):  # said again, per array, by the dispatch
                _log.debug("nnx_lab: a histogram kernel did not compile", exc_info=True)


def histograms_dispatch(arrays: Sequence[Any], bins: int = DEFAULT_BINS) -> list[Histogram | None]:
    """Start a histogram kernel per array on its device; returns device results (or None)."""
    bins = check_number(bins, "bins", 1, MAX_BINS, integer=True)
    out: list[Histogram | None] = [None] * len(arrays)
    alone: list[int] = []  # positions reduced by jax's own dispatch: host, multi-process or odd arrays
    spanning: list[Histogram | None] = []  # results of kernels run on several devices (an all-reduce each), in order
    for k, x in enumerate(arrays):
        if not _compilable(x):
            alone.append(k)
            continue
        try:
            out[k] = _compiled_kernel(x, bins, _use_scatter(x))(x)
        except (RuntimeError, TypeError, ValueError):  # a buffer deleted or donated meanwhile: its row says so
            _log.debug("nnx_lab: a histogram kernel failed", exc_info=True)
            continue
        _bound_spanning(x, out[k], spanning)
    for k in sorted(alone):
        x = arrays[k]
        if x is None:
            continue
        try:
            if not isinstance(x, jax.Array):
                x = np.asarray(x)
            if x.size == 0 or not is_numeric_dtype(x.dtype):
                continue
            with outside_context_mesh():
                out[k] = _hist_kernel(x, bins, _use_scatter(x))
            _bound_spanning(x, out[k], spanning)
        except (RuntimeError, TypeError, ValueError):  # a deleted/donated buffer: its row says so; no histogram
            _log.debug("nnx_lab: a histogram kernel failed", exc_info=True)
            out[k] = None
    return out


def _bound_spanning(x: jax.Array | np.ndarray, result: Histogram | None, spanning: list[Histogram | None]) -> None:
    """XLA's CPU client deadlocks with ~40 independent all-reduce programs in flight: at most
    :data:`MAX_SPANNING_IN_FLIGHT` of ours at once (the oldest has run long before, elsewhere)."""
    if isinstance(x, jax.Array) and len(x.sharding.device_set) > 1:
        spanning.append(result)
        if len(spanning) > MAX_SPANNING_IN_FLIGHT:
            jax.block_until_ready(spanning[-1 - MAX_SPANNING_IN_FLIGHT])


def histograms_fetch(pending: list[Histogram | None]) -> list[list[float] | None]:
    """``[lo, hi, c0, ..., cB-1]`` per array (None without finite values), in one device_get."""
    live = [p for p in pending if p is not None]
    try:
        fetched: Iterator[tuple[np.ndarray, np.ndarray] | None] = iter(jax.device_get(live))
    except (RuntimeError, ValueError):  # a buffer deleted or donated: no histograms (the rows say why)
        _log.debug("nnx_lab: fetching the histograms failed", exc_info=True)
        fetched = iter([None] * len(live))
    rows: list[list[float] | None] = []
    for p in pending:
        got = next(fetched) if p is not None else None
        if got is None:
            rows.append(None)
            continue
        (lo, hi), counts = got
        if not (math.isfinite(lo) and math.isfinite(hi)):
            rows.append(None)
            continue
        lo, hi = (float(v) for v in round_significant([lo, hi], PRECISION))
        rows.append([lo, hi, *(int(c) for c in counts)])
    return rows
