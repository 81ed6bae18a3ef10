"""On-device statistics: compiled reductions run where the arrays live.

Each array is reduced by a jitted kernel on its own device(s); a sharded array is
reduced shard by shard with a cross-device all-reduce, never gathered (on any mesh: Auto,
Explicit or Manual axes, dims the mesh does not divide, several processes). Every kernel
returns the same small result (six floats of the array's precision, four int32, and for
integers the exact extremes), and one ``jax.device_get`` per refresh brings back those
O(#arrays) numbers and nothing else. :class:`PendingStats` dispatches without waiting, so a
refresh never stalls a queue of asynchronously dispatched training steps.

The kernels are module-level ``jax.jit`` functions, so jax keeps one executable per
input (shape, dtype, sharding): compile cost grows with the number of distinct specs
in a model, not with the number of arrays, and every later refresh reuses them.

``mean``, ``std``, ``min``, ``max``, ``norm`` and ``abs_max`` describe the *finite*
values; ``nan_count`` and ``inf_count`` count the others; ``zero_frac`` is the
fraction of exact zeros among all elements. Integers get mean/std/min/max/zero_frac,
bools mean (the fraction that is True) and zero_frac, complex arrays the norm,
abs_max and counts of ``|x|``. Norm and std are exact from subnormal-adjacent to
overflow-adjacent magnitudes (the sums are scaled by a power of two, see :func:`_scaled`).
Subnormal inputs count as zero where XLA flushes them (its CPU and GPU defaults).

>>> import jax.numpy as jnp
>>> [s] = compute_stats([jnp.array([1.0, 3.0, jnp.nan, 0.0])])
>>> s["mean"], s["max"], s["nan_count"], s["zero_frac"]
(1.333..., 3.0, 1, 0.25)
"""

from __future__ import annotations

import functools
import math
import os
import weakref
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


def _scaled(x, n, finite):
    """Mean, std and norm of the finite values of ``x``, exact at every magnitude.

    Sums of squares underflow (Adam's ``nu`` near 1e-21 squares to 1e-42, below float32's
    range) and overflow (1e30 squares to inf). So, as BLAS's ``nrm2`` does, the values are first
    scaled by a power of two near their largest finite magnitude (exact: only the exponent
    changes) and the sums are taken of numbers in [-1, 1]. The mean is taken first and the
    variance from deviations about it (no cancellation when |mean| >> std); the norm follows from
    both, as a sum of two non-negative terms. Returns the three scaled values and the exponent:
    ``value = scaled * 2**e``, applied on the host in float64.

    No element is indexed (``x[0]`` is refused on arrays with Explicit mesh axes), so a
    sharded array is reduced shard by shard with small all-reduces, never gathered.
    """
    mn = jnp.min(x if finite is None else jnp.where(finite, x, jnp.inf))
    mx = jnp.max(x if finite is None else jnp.where(finite, x, -jnp.inf))
    info = jnp.finfo(x.dtype)
    amax = jnp.maximum(jnp.abs(mn), jnp.abs(mx))
    _, e = jnp.frexp(jnp.where(jnp.isfinite(amax) & (amax > 0), amax, 1).astype(x.dtype))
    e = jnp.clip(e, info.minexp + 1, info.maxexp - 2).astype(jnp.int32)  # 2**-e stays a normal number
    y = x * jnp.ldexp(jnp.ones((), x.dtype), -e)
    if finite is not None:
        y = jnp.where(finite, y, 0)
    count = jnp.maximum(n, 1).astype(x.dtype)
    mean = jnp.sum(y) / count
    d = y - mean
    if finite is not None:
        d = jnp.where(finite, d, 0)
    ss = jnp.sum(d * d)
    floats = jnp.stack([mean, jnp.sqrt(ss / count), mn, mx, jnp.sqrt(ss + count * mean * mean), amax])
    return floats, e


def _fast(x):
    """Every statistic of an array whose values are all finite, in one kernel (three fused passes:
    extremes and zeros, the scaled sum, the scaled deviations). With a NaN or Inf present, the
    mean comes out non-finite and the host asks :func:`_masked`."""
    # ceil(min(|x|, 1)) is exactly 1 for any non-zero value and 0 for zero; unlike
    # a comparison it fuses into a vectorised reduction on CPU.
    nonzero = jnp.sum(jnp.ceil(jnp.minimum(jnp.abs(x), 1)), dtype=jnp.float32).astype(jnp.int32)
    floats, e = _scaled(x, x.size, None)
    counts = jnp.stack([jnp.int32(0), jnp.int32(0), x.size - nonzero, e])
    return floats, counts


def _masked(x):
    """Statistics of the finite values, with exact NaN/Inf counts (the rare path)."""
    finite = jnp.isfinite(x)
    n_finite = jnp.sum(finite, dtype=jnp.int32)
    floats, e = _scaled(x, n_finite, finite)
    nan = jnp.sum(jnp.isnan(x), dtype=jnp.int32)
    inf = jnp.sum(jnp.isinf(x), dtype=jnp.int32)
    zeros = jnp.sum(x == 0, dtype=jnp.int32)
    # With no finite value there is nothing to describe: NaN, turned into None on the host.
    floats = jnp.where(n_finite > 0, floats, jnp.nan)
    return floats, jnp.stack([nan, inf, zeros, e])


def _as_float(x):
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def _integer(x):
    """Integers and bools: the float statistics, plus min and max exact in the array's own dtype
    (float32 holds integers exactly only up to 2**24)."""
    floats, counts = _fast(x.astype(jnp.promote_types(jnp.float32, x.dtype)))
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.int32)
    return floats, counts, jnp.stack([jnp.min(x), jnp.max(x)])


# Two kernels per kind, not one with a branch: the rare masked path (NaN or Inf present) is
# compiled only for an array that needs it, which halves the compile time of a first snapshot
# and keeps the common kernel branch-free (and about five times faster on CPU than masking).
_float_kernel = jax.jit(lambda x: _fast(_as_float(x)))
_float_masked = jax.jit(lambda x: _masked(_as_float(x)))
_complex_kernel = jax.jit(lambda x: _fast(_as_float(jnp.abs(x))))
_complex_masked = jax.jit(lambda x: _masked(_as_float(jnp.abs(x))))
# Integers and bools are always finite: the fast path is exact.
_int_kernel = jax.jit(_integer)
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
    """A statistic could not be computed for one array; the message says why. ``deleted``: the
    array's buffer had been deleted or donated."""

    def __init__(self, message: str, deleted: bool = False):
        super().__init__(message)
        self.deleted = deleted


def compute_stats(arrays: Sequence[Any]) -> list[dict | StatsError | None]:
    """Statistics of each array, computed on its device, fetched in one transfer (two when some
    array holds NaN or Inf: those get the masked kernel). Waits for the device.

    ``arrays`` holds live numeric arrays (``jax.Array``, numpy arrays or Python
    numbers). Returns, per array, a dict of the statistics for its dtype, ``None``
    for an empty array, or a :class:`StatsError` when that array could not be
    reduced (deleted while we looked, for instance). Never raises for one array.
    """
    return PendingStats(arrays).result()


class PendingStats:
    """Statistics dispatched to the devices, their small results on their way to the host.

    Creating one queues the kernels behind whatever the devices are doing (a training loop's
    steps) and starts the copies of their results to the host; it never waits. :meth:`ready`
    says, without waiting, whether the numbers have arrived (an array with NaN or Inf then gets
    its masked kernel, dispatched the same way); :meth:`result` waits for them.

    The arrays are held by weak reference: a refresh in flight never keeps an old step's
    parameters alive (the device keeps what its queued kernels read until they have run).
    """

    def __init__(self, arrays: Sequence[Any]):
        self._n = len(arrays)
        self._out: list[dict | StatsError | None] = [None] * self._n
        # (i, masked kernel, names, size, reference to the array, device result)
        self._todo: list[tuple[int, Any, tuple[str, ...], int, Any, Any]] = []
        self.pending_masked = False
        calls = []
        for i, x in enumerate(arrays):
            if not isinstance(x, jax.Array):
                x = np.asarray(x)  # a host value: jax copies it to the device, never the reverse
            kernel, masked, names = _kernel_and_names(x.dtype)
            if kernel is None:
                self._out[i] = StatsError(f"no statistics for dtype {x.dtype}")
                continue
            if x.size == 0:
                continue
            calls.append((i, kernel, masked, names, x))
        results = _dispatch([(kernel, x) for _, kernel, _, _, x in calls])
        for (i, _, masked, names, x), r in zip(calls, results):
            self._todo.append((i, masked, names, int(x.size), _ref(x) if masked is not None else None, r))
        _copy_to_host(results)

    def ready(self) -> bool:
        """Whether :meth:`result` would return at once (never waits; may dispatch masked kernels)."""
        for *_, r in reversed(self._todo):  # the last dispatched is usually the last to finish: O(1) per tick
            if not is_ready(r):
                return False
        self._advance()
        return not self._todo

    def wait(self) -> None:
        """Block until every dispatched result (masked ones included) is on the host's side."""
        while not self.ready():
            for *_, r in self._todo:
                try:
                    jax.block_until_ready(_leaves(r))
                except Exception:  # fetching will say what went wrong
                    pass

    def result(self) -> list[dict | StatsError | None]:
        """Per array: its statistics, None (empty) or a StatsError. Waits for the devices."""
        while self._todo:
            self._advance()
        return self._out

    def _advance(self) -> None:
        todo, self._todo = self._todo, []
        fetched = _fetch([r for *_, r in todo])
        again = []
        for (i, masked, names, size, ref, _), got in zip(todo, fetched):
            if isinstance(got, StatsError):
                self._out[i] = got
            elif masked is not None and not np.isfinite(got[0][:4]).all():
                # A non-finite mean, std, min or max: the array holds NaN or Inf. (The sums always
                # carry a NaN; a sharded min/max may drop it when combining shards.) Describe its
                # finite values and count the others with the masked kernel.
                x = ref()
                if x is None:
                    self._out[i] = StatsError("holds NaN or Inf; the array was replaced before they were counted")
                else:
                    again.append((i, masked, names, size, x))
            else:
                self._out[i] = _to_dict(got, names, size)
        if again:
            results = _dispatch([(masked, x) for _, masked, _, _, x in again])
            self._todo = [(i, None, names, size, None, r) for (i, _, names, size, _), r in zip(again, results)]
            _copy_to_host(results)
            self.pending_masked = True


def _ref(x: Any) -> Any:
    """A weak reference to a device array (a strong one to a host value)."""
    if isinstance(x, jax.Array):
        try:
            return weakref.ref(x)
        except TypeError:
            pass
    return lambda: x


def _leaves(result: Any) -> list:
    return [] if isinstance(result, StatsError) else jax.tree.leaves(result)


def is_ready(result: Any) -> bool:
    """Whether a device result (any pytree of arrays; None or a StatsError count as ready) has
    arrived, without waiting."""
    try:
        return all(leaf.is_ready() for leaf in _leaves(result))
    except Exception:  # deleted, or a backend without is_ready: fetching will say
        return True


def _copy_to_host(results: list[Any]) -> None:
    """Start the small results' copies to the host now, so a later fetch does not wait for them."""
    for r in results:
        for leaf in _leaves(r):
            try:
                leaf.copy_to_host_async()
            except Exception:  # not fully addressable (multi-process) or not supported: fetched later
                pass


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
        deleted = isinstance(x, jax.Array) and x.is_deleted()
        return StatsError(one_line(e), deleted=deleted)


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
    threads would not inherit, and with several processes (each must launch the same programs
    in the same order): then everything runs on the calling thread."""
    return (not jax.config.jax_enable_x64 and jax.config.jax_default_device is None
            and jax.process_count() == 1)


def _host(result: Any) -> Any:
    """A device result on the host. A result replicated over several processes' devices is not
    fully addressable: every process holds the whole (small) value, so its local copy is read."""
    def one(leaf):
        if getattr(leaf, "is_fully_addressable", True):
            return leaf
        return leaf.addressable_data(0)
    return jax.tree.map(one, result)


def _fetch(results: list[Any]) -> list[Any]:
    """The device results on the host, in one transfer; a failed one as a StatsError."""
    live = [j for j, r in enumerate(results) if not isinstance(r, StatsError)]
    fetched = list(results)
    if not live:
        return fetched
    try:
        got = jax.device_get([_host(results[j]) for j in live])
    except Exception:
        # One bad result must not hide the others: fetch them one by one to say which.
        got = []
        for j in live:
            try:
                got.append(jax.device_get(_host(results[j])))
            except Exception as e:
                got.append(StatsError(one_line(e)))
    for j, g in zip(live, got):
        fetched[j] = g
    return fetched


def _ldexp(v: float, e: int) -> float:
    try:
        return math.ldexp(v, e)
    except OverflowError:  # a float64 norm beyond float64's range
        return math.copysign(math.inf, v)


def _to_dict(result, names, size: int) -> dict:
    floats, counts, *exact = result
    mean, std, mn, mx, norm, abs_max = (float(v) for v in floats)
    e = int(counts[3])
    values = {
        "mean": _ldexp(mean, e), "std": _ldexp(std, e), "min": mn, "max": mx,
        "norm": _ldexp(norm, e), "abs_max": abs_max,
        "nan_count": int(counts[0]), "inf_count": int(counts[1]),
        "zero_frac": int(counts[2]) / size,
    }
    if exact:  # an integer array: its extremes exactly, as Python ints
        values["min"], values["max"] = (int(v) for v in exact[0])
    stats = {}
    for name in names:
        v = values[name]
        stats[name] = None if isinstance(v, float) and math.isnan(v) else v
    return stats
