"""Histograms computed where the arrays live: only ``bins + 2`` numbers per array reach the host.

Each array gets ``bins`` equal bins between its finite minimum and maximum (NaN/Inf are left
out; the statistics count them). The arrays of one device go through one program (one compile
for all their shapes); sharded arrays get a kernel each. All are dispatched first and fetched
together in one ``jax.device_get``.

>>> import jax.numpy as jnp
>>> histograms_fetch(histograms_dispatch([jnp.array([0.0, 1.0, 1.0, 3.0, jnp.nan])], bins=3))
[[0.0, 3.0, 1, 2, 1]]
>>> from nnx_lab.core.render import sparkline  # a histogram row drawn as text
>>> sparkline([0.0, 3.0, 1, 2, 0, 4])
'▂▄ █'
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import MAX_BINS, check_number
from ..render import DIGITS as PRECISION
from ..render import round_significant
from ._stats import is_numeric_dtype

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


def _hist_many(xs, bins, scatters):
    # Flattened first (free for a single-device array): XLA compiles a 1-D reduction in about half the
    # time of the same over 4 axes (flax's MNIST CNN's activations: 3.5 s -> 1.6 s for one program).
    return [_hist(x.reshape(-1), bins, scatter) for x, scatter in zip(xs, scatters)]


# The arrays of one device in one program: one compile for all of them (a capture's activations have
# a dozen shapes: one compile per shape took about twice as long as one for all, measured on flax's
# MNIST CNN), and jax keeps it for the next call with the same shapes.
_hist_many_kernel = jax.jit(_hist_many, static_argnums=(1, 2))


def _use_scatter(x: Any) -> bool:
    """bincount on a single CPU device; the fused reduction on accelerators and sharded arrays."""
    if not isinstance(x, jax.Array):
        return jax.default_backend() == "cpu"
    devices = x.sharding.device_set
    return len(devices) == 1 and next(iter(devices)).platform == "cpu"


#: Histogram kernels over several devices (each with an all-reduce) in flight at once, at most.
MAX_SPANNING_IN_FLIGHT = 8


def histograms_dispatch(arrays: Sequence[Any], bins: int = DEFAULT_BINS) -> list:
    """Start a histogram kernel per array on its device; returns device results (or None)."""
    check_number(bins, "bins", 1, MAX_BINS, integer=True)
    out: list = [None] * len(arrays)
    alone: list[int] = []  # positions reduced one kernel each: sharded, host or odd arrays
    by_device: dict[Any, list[int]] = {}
    for k, x in enumerate(arrays):
        try:
            if (
                isinstance(x, jax.Array)
                and len(x.sharding.device_set) == 1
                and x.size
                and is_numeric_dtype(x.dtype)
                and not x.is_deleted()
            ):
                by_device.setdefault(next(iter(x.sharding.device_set)), []).append(k)
            else:
                alone.append(k)
        except Exception:  # noqa: BLE001 - an array gone odd: the per-array path says nothing for it
            alone.append(k)
    for ks in by_device.values():
        if len(ks) == 1:
            alone.extend(ks)
            continue
        xs = [arrays[k] for k in ks]
        try:
            got = _hist_many_kernel(xs, bins, tuple(_use_scatter(x) for x in xs))
        except Exception:  # a buffer deleted or donated meanwhile: one kernel each says which
            alone.extend(ks)
            continue
        for k, g in zip(ks, got):
            out[k] = g
    spanning: list = []  # results of kernels run on several devices (an all-reduce each), in order
    for k in sorted(alone):
        x = arrays[k]
        if x is None:
            continue
        try:
            if not isinstance(x, jax.Array):
                x = np.asarray(x)
            if x.size == 0 or not is_numeric_dtype(x.dtype):
                continue
            out[k] = _hist_kernel(x, bins, _use_scatter(x))
            if isinstance(x, jax.Array) and len(x.sharding.device_set) > 1:
                # XLA's CPU client deadlocks with ~40 independent all-reduce programs in flight: at most
                # MAX_SPANNING_IN_FLIGHT of ours at once (the oldest has run long before, elsewhere).
                spanning.append(out[k])
                if len(spanning) > MAX_SPANNING_IN_FLIGHT:
                    jax.block_until_ready(spanning[-1 - MAX_SPANNING_IN_FLIGHT])
        except Exception:  # a deleted/donated buffer: its row says so; no histogram
            out[k] = None
    return out


def histograms_fetch(pending: list) -> list[list[float] | None]:
    """``[lo, hi, c0, ..., cB-1]`` per array (None without finite values), in one device_get."""
    live = [p for p in pending if p is not None]
    try:
        fetched = iter(jax.device_get(live))
    except Exception:
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
