"""The statistics kernels: jitted reductions, one pair per kind of dtype (what each statistic means
per dtype: docs/guide/snapshot.md, "What the numbers mean").

Every kernel returns the same small result: six floats of the array's precision, four int32
(NaN count, Inf count, zeros, the scale's exponent) and, for integers, the exact extremes.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

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
    sharded array (with several processes; in one process its shards come one by one: ``_shards``) is
    reduced shard by shard with small all-reduces, never gathered.
    """
    axes = tuple(range(x.ndim))
    if finite is None:
        mn, mx = lax.reduce_min(x, axes), lax.reduce_max(x, axes)
    else:
        mn = lax.reduce_min(lax.select(finite, x, lax.full_like(x, jnp.inf)), axes)
        mx = lax.reduce_max(lax.select(finite, x, lax.full_like(x, -jnp.inf)), axes)
    amax = lax.max(lax.abs(mn), lax.abs(mx))
    e = _exponent(amax)
    y = x * _pow2(-e, x.dtype)
    zeros = lax.full_like(x, 0)
    if finite is not None:
        y = lax.select(finite, y, zeros)
    if isinstance(n, int):  # the size: a constant (an int32 could not hold 2**31 elements or more)
        count = jnp.asarray(float(max(n, 1)), x.dtype)
    else:
        count = lax.convert_element_type(lax.max(n, jnp.int32(1)), x.dtype)
    mean = lax.reduce_sum(y, axes) / count
    d = y - mean
    if finite is not None:
        d = lax.select(finite, d, zeros)
    ss = lax.reduce_sum(d * d, axes)
    floats = jnp.stack([mean, lax.sqrt(ss / count), mn, mx, lax.sqrt(ss + count * mean * mean), amax])
    return floats, e


# The exponent and the power of two are bit manipulations written with lax directly (jnp's frexp,
# ldexp, clip and where are nested jitted functions): the kernel lowers in half the time, which is
# most of a first snapshot's work besides XLA's compile (one lowering per distinct shape).
def _int_bits(dtype):
    return {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[np.dtype(dtype).itemsize]


def _exponent(amax):
    """``frexp(amax)[1]`` (``amax = m * 2**e``, ``0.5 <= m < 1``), clipped so that ``2**-e`` is a
    normal number; 1 when ``amax`` is 0, subnormal-flushed, NaN or Inf (as ``frexp(1)``)."""
    info = jnp.finfo(amax.dtype)
    bits = lax.bitcast_convert_type(amax, _int_bits(amax.dtype))
    biased = lax.convert_element_type((bits >> info.nmant) & ((1 << (info.bits - info.nmant - 1)) - 1), jnp.int32)
    e = lax.clamp(jnp.int32(info.minexp + 1), biased - jnp.int32(info.maxexp - 2), jnp.int32(info.maxexp - 2))
    usable = lax.is_finite(amax) & (amax > 0)
    return lax.select(usable, e, jnp.int32(1))


def _pow2(k, dtype):
    """``2.0**k`` in ``dtype``, exactly, for ``k`` whose power of two is a normal number."""
    info = jnp.finfo(dtype)
    biased = lax.convert_element_type(k + jnp.int32(info.maxexp - 1), _int_bits(dtype))
    return lax.bitcast_convert_type(biased << info.nmant, dtype)


def _fast(x):
    """Every statistic of an array whose values are all finite, in one kernel (three fused passes:
    extremes and zeros, the scaled sum, the scaled deviations). With a NaN or Inf present, the
    mean comes out non-finite and the host asks :func:`_masked`."""
    # ceil(min(|x|, 1)) is exactly 1 for any non-zero value and 0 for zero; unlike
    # a comparison it fuses into a vectorised reduction on CPU.
    ones = lax.convert_element_type(lax.ceil(lax.min(lax.abs(x), lax.full_like(x, 1))), jnp.float32)
    nonzero = lax.convert_element_type(lax.reduce_sum(ones, tuple(range(x.ndim))), jnp.int32)
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


def _row_shape(shape: tuple) -> tuple[int, int]:
    """``(rows, length)`` viewing an array as rows of trailing elements (a free reshape) for a two-stage
    sum: each row summed alone, then the row sums; the rounding error grows with ``rows + length``,
    not with the size (a single running sum over a million float32 values lost 5e-5)."""
    n = int(np.prod(shape, dtype=np.int64))
    length = 1
    for d in reversed(shape):
        if length >= 256:
            break
        length *= int(d)
    if length > 16384:  # one long trailing axis: split it by a divisor of the size, if one fits
        length = next((c for c in range(4096, 255, -1) if n % c == 0), length)
    return (n // length, length) if length else (0, 1)


def _sum_min_max(a, b):
    return (jnp.minimum(a[0], b[0]), jnp.maximum(a[1], b[1]), a[2] + b[2], a[3] + b[3], a[4] + b[4])


def _one_pass(x, shift, e):
    """min, max, Σy, Σy² with ``y = x·2**-e - shift·2**-e``, and the zero count, in ONE reduction (a variadic
    ``reduce``: every element is read once). ``shift`` and ``e`` come from the array's previous refresh
    (its mean and the exponent of its largest deviation from it), so the sums need no first pass to
    find the scale; the host checks the result (:mod:`._one_pass`) and asks the exact kernel when the
    guess was too far off. Floats ``[Σy, Σy², min, max, 0, 0]``, counts ``[0, 0, zeros, e]``."""
    rows = x.reshape(_row_shape(x.shape))
    scale = jnp.ldexp(jnp.ones((), x.dtype), -e)
    y = rows * scale - shift.astype(x.dtype) * scale  # scaled first (exact), so no difference is subnormal
    zero, inf = jnp.zeros((), x.dtype), jnp.array(jnp.inf, x.dtype)
    init = (inf, -inf, zero, zero, jnp.int32(0))
    operands = (rows, rows, y, y * y, (rows != 0).astype(jnp.int32))
    mn, mx, s1, s2, nonzero = jax.lax.reduce(
        jax.lax.reduce(operands, init, _sum_min_max, (1,)), init, _sum_min_max, (0,)
    )
    floats = jnp.stack([s1, s2, mn, mx, zero, zero])
    return floats, jnp.stack([jnp.int32(0), jnp.int32(0), x.size - nonzero, e.astype(jnp.int32)])


def _float_type(dtype):
    """The float type a kernel reduces ``dtype`` in: float32 at least (float64 stays). jax refuses to
    promote int4 and the float8 types implicitly (TypePromotionError): they are upcast to float32,
    on the device, as bfloat16 is."""
    try:
        return jnp.promote_types(dtype, jnp.float32)
    except (TypeError, ValueError):  # TypePromotionError: a ValueError (jax 0.10; jax.dtypes lacks it in 0.7)
        return jnp.dtype(jnp.float32)


def _as_float(x):
    return x.astype(_float_type(x.dtype))


def _integer(x):
    """Integers and bools: the float statistics, plus min and max exact in the array's own dtype
    (float32 holds integers exactly only up to 2**24); int4/uint4 in int8 (exact)."""
    floats, counts = _fast(x.astype(_float_type(x.dtype)))
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.int32)
    elif jnp.iinfo(x.dtype).bits < 8:
        x = x.astype(jnp.int8)
    return floats, counts, jnp.stack([jnp.min(x), jnp.max(x)])


# Two kernels per kind, not one with a branch: the rare masked path (NaN or Inf present) is
# compiled only for an array that needs it, which halves the compile time of a first snapshot
# and keeps the common kernel branch-free (and about five times faster on CPU than masking).
float_kernel = jax.jit(lambda x: _fast(_as_float(x)))
float_masked = jax.jit(lambda x: _masked(_as_float(x)))
complex_kernel = jax.jit(lambda x: _fast(_as_float(jnp.abs(x))))
complex_masked = jax.jit(lambda x: _masked(_as_float(jnp.abs(x))))
# Integers and bools are always finite: the fast path is exact.
int_kernel = jax.jit(_integer)
KERNELS = (float_kernel, float_masked, complex_kernel, complex_masked, int_kernel)


@functools.cache
def grouped(kernel, k: int):
    """``kernel`` over ``k`` arrays of one spec in one launch: ``lax.map`` over them stacked (a loop
    whose body is ``kernel`` on one array, compiled with ``kernel``'s options: bitwise the numbers
    ``kernel`` gives each array alone, which ``vmap``'s batched reduction is not). Each result
    gains a leading axis of ``k`` rows, in the arrays' order."""
    return jax.jit(lambda *xs: lax.map(kernel, jnp.stack(xs)))


def result_count(kernel) -> int:
    """How many arrays ``kernel`` (one of KERNELS) returns: the disk cache rebuilds an executable's
    output tree from it (:mod:`._executables`), never from the file."""
    return 3 if kernel is int_kernel else 2


# Used inside a viewer's compiled program (:mod:`._programs`) in place of ``float_kernel``, with the
# previous refresh's shift and exponent of each array: one pass over the data instead of three.
float_one_pass = lambda x, shift, e: _one_pass(_as_float(x), shift, e)  # noqa: E731


@functools.cache
def kernel_and_names(dtype: np.dtype):
    """(fast kernel, masked kernel or None when the fast one is always exact, statistic names)."""
    if jnp.issubdtype(dtype, jnp.bool_):
        return int_kernel, None, _BOOL_STATS
    if jnp.issubdtype(dtype, jnp.integer):
        return int_kernel, None, _INT_STATS
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return complex_kernel, complex_masked, _COMPLEX_STATS
    if jnp.issubdtype(dtype, jnp.floating):
        return float_kernel, float_masked, _FLOAT_STATS
    return None, None, ()


def kernels_file() -> str:
    """This module's file: the kernels' source, part of every cached executable's key."""
    return __file__


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
    return kernel_and_names(dtype)[0] is not None
