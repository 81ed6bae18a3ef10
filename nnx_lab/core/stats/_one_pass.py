"""The one-pass statistics of a viewer's refresh: the guess they start from and the check they end with.

The exact float kernel (:func:`._kernels._fast`) reads an array three times: its extremes (to find a
power-of-two scale that keeps the sums of squares away from overflow and underflow), the scaled sum
(the mean), the squared deviations from that mean. A viewer refreshes the same arrays again and again
and they change little between refreshes, so its program (:mod:`._programs`) gives each float array
the previous refresh's mean as a *shift* ``c`` and the exponent ``e`` of its largest deviation from
it, and reads the array once (:func:`._kernels._one_pass`): min, max, ``S1 = Σy`` and ``S2 = Σy²`` of
``y = (x - c)·2**-e``. Then, in float64 on the host::

    mean = c + 2**e · S1/n        var = 4**e · (S2/n - (S1/n)²)

This is exact when the guess was good, which :func:`finish` checks on the numbers themselves:

* every sum finite (else NaN/Inf are present, or the guess overflowed: the masked kernel follows);
* the largest ``|y|`` (known exactly from min and max) within ``2**±20``: no overflow of ``S2``,
  and no value whose square would matter flushed to zero (or all values equal the shift exactly);
* ``(S1/n)² <= 4·(S2/n - (S1/n)²)``: the shift within two standard deviations of the new mean, so
  the subtraction loses at most ``1 + 4`` times the sums' own rounding (the exact kernel's deviations
  about a computed mean carry about the same);
* or min == max (a scalar, an array filled with one value): then mean = min and std = 0 exactly,
  whatever the guess (the sums must still be finite: a NaN anywhere reaches them).

An array that fails is described by the exact kernel in a second round; its result is the next guess.
The first refresh has no guess (per-array exact kernels run until the program is compiled).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ..memo import Memo

if TYPE_CHECKING:
    from ._types import StructureKey


#: The shift must lie within sqrt(CANCEL) standard deviations of the mean.
CANCEL = 4.0
#: The largest scaled deviation |x - c|·2**-e must lie in [2**-SPAN, 2**SPAN] (or be exactly 0).
SPAN = 20


class Hints:
    """Per call of a launch plan: the shift and exponent for its next one-pass refresh, and whether
    there is one yet (a plan's refreshes update them as results arrive; several refreshes in flight
    may read and write them in any order: a stale guess only fails its check)."""

    def __init__(self, dtypes: list):
        n = len(dtypes)
        self.shift = np.zeros(n)
        self.exp = np.zeros(n, np.int32)
        self.known = np.zeros(n, bool)
        # Per call: whether its kernel computes in float32 (the shift is held as one), the exponents
        # for which 2**-e stays a normal number (the exact kernel clips its own the same way).
        self.single = np.asarray([np.dtype(d) != np.float64 for d in dtypes], bool)
        self._range = np.asarray([exponent_range(d) for d in dtypes], np.int64).reshape(-1, 2)
        self._lock = threading.Lock()

    def take(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The guesses for ``positions``, copied (what one launch used): shift, exponent, known."""
        with self._lock:
            return self.shift[positions], self.exp[positions], self.known[positions]

    def learn(self, positions: list[int], mean: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Take the next guesses from fresh statistics (float64 mean, min, max of each call; NaN:
        no guess)."""
        single = self.single[positions]
        with np.errstate(over="ignore", invalid="ignore"):
            shift = np.where(single, mean.astype(np.float32).astype(np.float64), mean)  # as the device holds it
            ok = np.isfinite(shift) & np.isfinite(lo) & np.isfinite(hi)
            shift = np.where(ok, shift, 0.0)
            spread = np.where(ok, np.maximum(np.abs(lo - shift), np.abs(hi - shift)), 0.0)
        _, exp = np.frexp(np.where(spread > 0, spread, 1.0))
        bounds = self._range[positions]
        exp = np.clip(exp, bounds[:, 0], bounds[:, 1]).astype(np.int32)
        with self._lock:
            self.shift[positions], self.exp[positions], self.known[positions] = shift, exp, ok


MAX_STRUCTURES = 64  # structures whose guesses are kept (least recently used dropped)
_by_structure: Memo[StructureKey, Hints] = Memo(MAX_STRUCTURES)  # a program's structure key -> its Hints


class PlanHints:
    """A launch plan's guesses, per chunk: those of the chunk's structure (its program key), shared by
    every plan of that structure (a standalone snapshot, a viewer following a name rebound to a new model
    of the same structure) and learned from whatever describes its arrays (the first refresh's per-array
    kernels included, so the program's first launch already has them)."""

    def __init__(self, chunks: list[tuple[list[int], StructureKey]], dtypes: Mapping[int, np.dtype]):
        # chunks: the plan's (calls, program key); dtypes: per call
        self.chunks = []
        for calls, key in chunks:
            hints = _by_structure.get(key)
            if hints is None:  # (two plans made at once may each make one: a guess not shared only fails its check)
                hints = _by_structure[key] = Hints([dtypes[m] for m in calls])
            self.chunks.append(hints)
        self._where = {m: (c, p) for c, (calls, _) in enumerate(chunks) for p, m in enumerate(calls)}

    def learn(self, calls: list[int], rows: list[int], table) -> None:
        """Learn from the statistics of ``calls`` (one table row each, ``rows``) in ``table``."""
        parts: dict[int, tuple[list, list]] = {}
        for m, row in zip(calls, rows):
            if m in self._where:
                c, p = self._where[m]
                parts.setdefault(c, ([], []))[0].append(p)
                parts[c][1].append(row)
        for c, (positions, part) in parts.items():
            self.chunks[c].learn(positions, *table.mean_min_max(part))


def exponent_range(dtype) -> tuple[int, int]:
    """The exponents ``e`` for which ``2**-e`` is a normal number of the kernel's float type."""
    info = np.finfo(np.float64 if np.dtype(dtype) == np.float64 else np.float32)
    return int(info.minexp) + 1, int(info.maxexp) - 2


def finish(raw: np.ndarray, counts: np.ndarray, shift: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One-pass results ``raw [k, 6] = (S1, S2, min, max, 0, 0)`` -> the exact kernel's rows
    ``[mean, std, min, max, norm, abs_max]`` (mean, std and norm in units of ``2**e``, e in
    ``counts[:, 3]``), and per row whether the check passed (a row that failed must be recomputed)."""
    raw = np.asarray(raw, np.float64)
    e = counts[:, 3].astype(np.int64)
    s1, s2, lo, hi = raw[:, 0], raw[:, 1], raw[:, 2], raw[:, 3]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        m1, q = s1 / sizes, s2 / sizes
        var = q - m1 * m1
        top = np.ldexp(np.maximum(np.abs(lo - shift), np.abs(hi - shift)), -e)  # the largest |y|, exactly
        finite = np.isfinite(raw[:, :4]).all(axis=1)  # (a NaN anywhere reaches S1)
        ok = finite & ((top == 0) | ((top >= 2.0**-SPAN) & (top <= 2.0**SPAN))) & (m1 * m1 <= CANCEL * var)
        # Every value the same (a scalar, a filled array): min and max say it all, whatever the guess.
        same = finite & (lo == hi)
        var = np.where(same, 0.0, var)
        ok |= same
        mean = np.where(same, np.ldexp(lo, -e), np.ldexp(shift, -e) + m1)  # (c + (min - c): cancellation)
        var = np.maximum(var, 0.0)
        floats = np.stack(
            [mean, np.sqrt(var), lo, hi, np.sqrt(sizes * (var + mean * mean)), np.maximum(np.abs(lo), np.abs(hi))],
            axis=1,
        )
    return floats, ok


def finish_rows(
    floats: np.ndarray, counts: np.ndarray, rows: np.ndarray, shifts: np.ndarray, known: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """Turn the one-pass ``rows`` of a program's ``floats`` into the exact kernel's, in place (NaN where
    the check failed or there was no guess). Returns, per one-pass array, whether the exact kernel must
    describe it: a finite result that failed (a non-finite one gets the masked kernel, as NaN does)."""
    raw = floats[rows]
    got, ok = finish(raw, counts[rows], shifts, sizes)
    ok &= known
    got[~ok] = np.nan
    floats[rows] = got
    return ~ok & np.isfinite(raw[:, :4]).all(axis=1)
