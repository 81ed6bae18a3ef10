"""On-device statistics: compiled reductions run where the arrays live.

Each array is reduced by a jitted kernel on its own device(s); a sharded array is
reduced shard by shard with a cross-device all-reduce, never gathered. Every kernel
returns the same small result (``float32[6]``, ``int32[3]``), and one
``jax.device_get`` per refresh brings back those O(#arrays) numbers and nothing else.

The kernels are module-level ``jax.jit`` functions, so jax keeps one executable per
input (shape, dtype, sharding): compile cost grows with the number of distinct specs
in a model, not with the number of arrays, and every later refresh reuses them.

``mean``, ``std``, ``min``, ``max``, ``norm`` and ``abs_max`` describe the *finite*
values; ``nan_count`` and ``inf_count`` count the others; ``zero_frac`` is the
fraction of exact zeros among all elements. Integers get mean/std/min/max/zero_frac,
bools mean (the fraction that is True) and zero_frac, complex arrays the norm,
abs_max and counts of ``|x|``.

>>> import jax.numpy as jnp
>>> [s] = compute_stats([jnp.array([1.0, 3.0, jnp.nan, 0.0])])
>>> s["mean"], s["max"], s["nan_count"], s["zero_frac"]
(1.333..., 3.0, 1, 0.25)
"""

from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._util import one_line

STAT_NAMES = ("mean", "std", "min", "max", "norm", "abs_max", "nan_count", "inf_count", "zero_frac")
_FLOAT_STATS = STAT_NAMES
_INT_STATS = ("mean", "std", "min", "max", "zero_frac")
_BOOL_STATS = ("mean", "zero_frac")
_COMPLEX_STATS = ("norm", "abs_max", "nan_count", "inf_count", "zero_frac")


def _finish(n, mean, var, mn, mx, sumsq, nan, inf, zeros):
    f = jnp.float32
    std = jnp.sqrt(jnp.maximum(var, 0))
    norm = jnp.sqrt(jnp.maximum(sumsq, 0))
    abs_max = jnp.maximum(jnp.abs(mn), jnp.abs(mx))
    floats = jnp.stack([mean, std, mn, mx, norm, abs_max]).astype(f)
    counts = jnp.stack([nan, inf, zeros]).astype(jnp.int32)
    return floats, counts


def _fast(x):
    """Five reductions XLA runs at memory speed, in one kernel; exact when every value is finite
    (otherwise mean, std, min or max comes out non-finite, and the host asks :func:`_masked`).

    The sums are shifted by the first element so the variance does not cancel
    when |mean| >> std (a BatchNorm running variance of ones, say).
    """
    n = x.size
    x0 = x[(0,) * x.ndim]
    d = x - x0
    s1 = jnp.sum(d)
    s2 = jnp.sum(d * d)
    mn, mx = jnp.min(x), jnp.max(x)
    # ceil(min(|x|, 1)) is exactly 1 for any non-zero value and 0 for zero; unlike
    # a comparison it fuses into a vectorised reduction on CPU.
    nonzero = jnp.sum(jnp.ceil(jnp.minimum(jnp.abs(x), 1)))
    mean_d = s1 / n
    mean = x0 + mean_d
    var = s2 / n - mean_d * mean_d
    sumsq = s2 + 2 * x0 * s1 + n * x0 * x0
    zeros = n - nonzero.astype(jnp.int32)
    return _finish(n, mean, var, mn, mx, sumsq, 0, 0, zeros)


def _masked(x):
    """Statistics of the finite values, with exact NaN/Inf counts (the rare path)."""
    finite = jnp.isfinite(x)
    n_finite = jnp.sum(finite, dtype=jnp.int32)
    xf = jnp.where(finite, x, 0)
    denom = jnp.maximum(n_finite, 1).astype(x.dtype)
    mean = jnp.sum(xf) / denom
    d = jnp.where(finite, x - mean, 0)
    var = jnp.sum(d * d) / denom
    mn = jnp.min(jnp.where(finite, x, jnp.inf))
    mx = jnp.max(jnp.where(finite, x, -jnp.inf))
    nan = jnp.sum(jnp.isnan(x), dtype=jnp.int32)
    inf = jnp.sum(jnp.isinf(x), dtype=jnp.int32)
    zeros = jnp.sum(x == 0, dtype=jnp.int32)
    floats, counts = _finish(x.size, mean, var, mn, mx, jnp.sum(xf * xf), nan, inf, zeros)
    # With no finite value there is nothing to describe: NaN, turned into None on the host.
    floats = jnp.where(n_finite > 0, floats, jnp.nan)
    return floats, counts


def _as_float(x):
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


# Two kernels per kind, not one with a branch: the rare masked path (NaN or Inf present) is
# compiled only for an array that needs it, which halves the compile time of a first snapshot
# and keeps the common kernel branch-free.
_float_kernel = jax.jit(lambda x: _fast(_as_float(x)))
_float_masked = jax.jit(lambda x: _masked(_as_float(x)))
_complex_kernel = jax.jit(lambda x: _fast(_as_float(jnp.abs(x))))
_complex_masked = jax.jit(lambda x: _masked(_as_float(jnp.abs(x))))
# Integers and bools are always finite: the fast path is exact.
_int_kernel = jax.jit(lambda x: _fast(x.astype(jnp.float32)))
_KERNELS = (_float_kernel, _float_masked, _complex_kernel, _complex_masked, _int_kernel)


@functools.lru_cache(maxsize=None)
def _kernel_and_names(dtype: np.dtype):
    """(fast kernel, masked kernel or None when the fast one is always exact, statistic names)."""
    if jnp.issubdtype(dtype, jnp.bool_):
        return _int_kernel, None, _BOOL_STATS
    if jnp.issubdtype(dtype, jnp.integer):
        return _int_kernel, None, _INT_STATS
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return _complex_kernel, _complex_masked, _COMPLEX_STATS
    if jnp.issubdtype(dtype, jnp.floating):
        return _float_kernel, _float_masked, _FLOAT_STATS
    return None, None, ()


def is_numeric_dtype(dtype) -> bool:
    """True for dtypes with statistics (floats, ints, bools, complex; not PRNG keys).

    >>> import jax, numpy as np
    >>> is_numeric_dtype(np.dtype("float32")), is_numeric_dtype(jax.random.key(0).dtype)
    (True, False)
    """
    try:
        if jnp.issubdtype(dtype, jax.dtypes.prng_key):
            return False
    except TypeError:
        return False
    return _kernel_and_names(dtype)[0] is not None


def kernel_cache_size() -> int:
    """Executables compiled so far by the statistics kernels (one per distinct spec)."""
    return sum(k._cache_size() for k in _KERNELS)


class StatsError(Exception):
    """A statistic could not be computed for one array; the message says why."""


def compute_stats(arrays: Sequence[Any]) -> list[dict | StatsError | None]:
    """Statistics of each array, computed on its device, fetched in one transfer (two when some
    array holds NaN or Inf: those get the masked kernel).

    ``arrays`` holds live numeric arrays (``jax.Array``, numpy arrays or Python
    numbers). Returns, per array, a dict of the statistics for its dtype, ``None``
    for an empty array, or a :class:`StatsError` when that array could not be
    reduced (deleted while we looked, for instance). Never raises for one array.
    """
    out: list[dict | StatsError | None] = [None] * len(arrays)
    calls: list[tuple[int, Any, Any, tuple[str, ...], Any]] = []  # (i, kernel, masked kernel, names, x)
    for i, x in enumerate(arrays):
        if not isinstance(x, jax.Array):
            x = np.asarray(x)  # a host value: jax copies it to the device, never the reverse
        kernel, masked, names = _kernel_and_names(x.dtype)
        if kernel is None:
            out[i] = StatsError(f"no statistics for dtype {x.dtype}")
            continue
        if x.size == 0:
            continue
        calls.append((i, kernel, masked, names, x))
    fetched = _fetch(_dispatch([(kernel, x) for _, kernel, _, _, x in calls]))
    # A non-finite mean, std, min or max means the array holds NaN or Inf (or a sum overflowed):
    # describe its finite values and count the others with the masked kernel.
    again = [j for j, (got, (_, _, masked, _, _)) in enumerate(zip(fetched, calls))
             if masked is not None and not isinstance(got, StatsError) and not np.isfinite(got[0][:4]).all()]
    if again:
        for j, got in zip(again, _fetch(_dispatch([(calls[j][2], calls[j][4]) for j in again]))):
            fetched[j] = got
    for (i, _, _, names, _), got in zip(calls, fetched):
        out[i] = got if isinstance(got, StatsError) else _to_dict(got, names, arrays[i])
    return out


_dispatched: set = set()  # (kernel, shape, dtype, sharding) run before: compiled


def _spec(kernel: Any, x: Any) -> Any:
    key = (id(kernel), x.shape, x.dtype, getattr(x, "sharding", None))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _call(kernel: Any, x: Any) -> Any:
    try:
        return kernel(x)
    except Exception as e:  # a buffer deleted or donated between the check and the call
        return StatsError(one_line(e))


def _dispatch(calls: list[tuple[Any, Any]]) -> list[Any]:
    """Run each ``kernel(x)`` (results stay on device; a failure becomes a StatsError). Specs never
    run before are compiled side by side on threads first: a first snapshot compiles one
    executable per distinct spec, and XLA compiles without holding the GIL."""
    results: list[Any] = [None] * len(calls)
    first: dict[Any, int] = {}
    for j, (kernel, x) in enumerate(calls):
        key = _spec(kernel, x)
        if key is not None and key not in _dispatched and key not in first:
            first[key] = j
    if len(first) > 1 and _threads_see_this_config():
        with ThreadPoolExecutor(min(len(first), os.cpu_count() or 2), thread_name_prefix="nnx_lab-compile") as pool:
            futures = {j: pool.submit(_call, *calls[j]) for j in first.values()}
        for j, future in futures.items():
            results[j] = future.result()
    for j, (kernel, x) in enumerate(calls):
        if results[j] is None:
            results[j] = _call(kernel, x)
    _dispatched.update(key for key, j in first.items() if not isinstance(results[j], StatsError))
    return results


def _threads_see_this_config() -> bool:
    """False under a thread-local jax setting (``jax.default_device(...)``, x64) that worker
    threads would not inherit: then everything runs on the calling thread."""
    return not jax.config.jax_enable_x64 and jax.config.jax_default_device is None


def _fetch(results: list[Any]) -> list[Any]:
    """The device results on the host, in one transfer; a failed one as a StatsError."""
    live = [j for j, r in enumerate(results) if not isinstance(r, StatsError)]
    fetched = list(results)
    if not live:
        return fetched
    try:
        got = jax.device_get([results[j] for j in live])
    except Exception:
        # One bad result must not hide the others: fetch them one by one to say which.
        got = []
        for j in live:
            try:
                got.append(jax.device_get(results[j]))
            except Exception as e:
                got.append(StatsError(one_line(e)))
    for j, g in zip(live, got):
        fetched[j] = g
    return fetched


def _to_dict(result, names, x) -> dict:
    floats, counts = result
    size = int(np.size(x))
    values = {
        "mean": floats[0], "std": floats[1], "min": floats[2], "max": floats[3],
        "norm": floats[4], "abs_max": floats[5],
        "nan_count": int(counts[0]), "inf_count": int(counts[1]),
        "zero_frac": float(counts[2]) / size,
    }
    stats = {}
    for name in names:
        v = values[name]
        if isinstance(v, np.floating):
            v = float(v)
            v = None if math.isnan(v) else v
        stats[name] = v
    return stats
