"""How every number, size, shape and label is written: the rules the static renderings and the
browser share (``tools/js_constants.py`` reads this module's constants through ``core.render``;
``js/src/shared/format.js`` implements :func:`format_number` and :func:`format_bytes` again, tested
against this module's output).

>>> format_bytes(302_700_000)
'288.7 MiB'
>>> format_number(0.000123456), format_number(12345678.0), format_number(None)
('1.235e-4', '1.235e+7', '')
"""

from __future__ import annotations

import decimal
import fractions
import html
import math
from typing import Any, Sequence

import numpy as np

#: The statistic columns of a table (static here, live in the viewer) and each statistic's label.
STAT_COLUMNS = ("mean", "std", "min", "max", "norm")
STAT_LABELS = {"mean": "mean", "std": "std", "min": "min", "max": "max", "norm": "norm", "abs_max": "abs max"}
#: The label of the NaN/Inf counts column.
NONFINITE_LABEL = "NaN/Inf"
#: Columns of the series beside the rows (gradients given, the update measured or given), each shown
#: when its series exists: id -> (label, what it is).
SERIES_COLUMNS = ("g_norm", "g_ratio", "u_ratio")
SERIES_LABELS = {
    "g_norm": ("\u2016grad\u2016", "norm of the gradient given to tick(grads=...) or log(grads=...)"),
    "g_ratio": ("\u2016g\u2016/\u2016\u03b8\u2016", "gradient norm over the parameter's norm"),
    "u_ratio": (
        "\u2016\u0394\u03b8\u2016/\u2016\u03b8\u2016",
        "update over parameter norm, \u2016\u03b8\u209c \u2212 \u03b8\u209c\u208b\u2081\u2016 / "
        "\u2016\u03b8\u209c\u208b\u2081\u2016 (about 1e-3 when the learning rate is healthy)",
    ),
}
#: One colour per filter column of a split report, readable on light and dark backgrounds.
FILTER_COLORS = ("#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#e53935", "#6d4c41", "#3949ab")


#: Significant digits of every statistic shown (the payload is rounded to as many).
DIGITS = 4
#: Byte units, 1024 apart.
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_HALF_UP = decimal.Context(prec=DIGITS, rounding=decimal.ROUND_HALF_UP)


def format_bytes(n: int | float | None) -> str:
    """A byte count in binary units, one decimal above 1023 B (the unit chosen after rounding).

    Ties round away from zero on the exact value, as JavaScript's ``toFixed`` does.

    >>> [format_bytes(n) for n in (0, 1023, 1024, 1536, 1048575, 2**50 * 3)]
    ['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '1.0 MiB', '3.0 PiB']
    """
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return ""
    if n < 0:
        return "-" + format_bytes(-n)
    exact = fractions.Fraction(n)
    if exact < 1024:
        return f"{math.floor(exact + fractions.Fraction(1, 2))} B"
    for power, unit in enumerate(BYTE_UNITS[1:], 1):
        tenths = math.floor(exact * 10 / 1024**power + fractions.Fraction(1, 2))  # half up, exact
        if tenths < 10240 or unit == BYTE_UNITS[-1]:
            return f"{tenths // 10}.{tenths % 10} {unit}"
    raise AssertionError("unreachable")


def format_count(n: int) -> str:
    """>>> format_count(75_681_840)
    '75.7M'
    """
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.1f}{suffix}"
    return str(n)


def format_number(v: float | int | None) -> str:
    """A statistic to :data:`DIGITS` significant digits, trailing zeros dropped.

    Rounded half away from zero on the exact value (as JavaScript's ``toExponential``); plain
    notation when the rounded value's decimal exponent is in -3..3, else ``1.235e+7``/``-3.5e-5``.

    >>> [format_number(x) for x in (0.264, 1234.5, 12345, 0.001, -3.5e-5, -0.0, float("nan"), float("-inf"))]
    ['0.264', '1235', '1.235e+4', '0.001', '-3.5e-5', '0', 'NaN', '-inf']
    """
    if v is None:
        return ""
    x = float(v)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    digits = _HALF_UP.plus(decimal.Decimal(abs(x)))
    mantissa, exponent = f"{digits:.{DIGITS - 1}e}".split("e")
    e = int(exponent)
    sign = "-" if x < 0 else ""
    if -3 <= e < DIGITS:
        return sign + _trim(f"{digits:.{DIGITS - 1 - e}f}")
    return f"{sign}{_trim(mantissa)}e{'+' if e >= 0 else '-'}{abs(e)}"


def format_stat(v: float | int | None) -> str:
    """A statistic as the live widget shows it: rounded as the browser's payload is
    (``Snapshot.to_dict``: ``round_significant``, then ``.4g``, both half to even), then
    :func:`format_number`.

    >>> format_stat(1234.5), format_number(1234.5)
    ('1234', '1235')
    """
    if v is None:
        return ""
    rounded = float(round_significant([float(v)], DIGITS)[0])
    return format_number(float(f"{rounded:.{DIGITS}g}") if math.isfinite(rounded) else rounded)


def round_significant(values: Any, digits: int = 4) -> np.ndarray:
    """Round to ``digits`` significant digits, elementwise (NaN/Inf/0 unchanged).

    The one rounding used for the browser payload and for the history behind sparklines, so the
    two always agree.

    >>> round_significant([3.168886, -0.000123456, 0.0, float("nan"), 123456.0]).tolist()
    [3.169, -0.0001235, 0.0, nan, 123500.0]
    """
    a = np.asarray(values, np.float64)
    finite = np.isfinite(a) & (a != 0)
    exponent = np.floor(np.log10(np.abs(np.where(finite, a, 1.0))))
    scale = 10.0 ** (exponent - (digits - 1))
    return np.where(finite, np.round(a / scale) * scale, a)


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_shape(shape: tuple[int, ...] | None) -> str:
    return "" if shape is None else str(tuple(shape))


def nonfinite_text(row: Any) -> str:
    """The NaN/Inf counts of ``row`` (a snapshot Row: read by attribute, ``row.stats``) as text.

    >>> from types import SimpleNamespace as NS
    >>> nonfinite_text(NS(stats={"nan_count": 2, "inf_count": 0})), nonfinite_text(NS(stats=None))
    ('2 NaN', '')
    """
    if not row.stats:
        return ""
    parts = []
    if row.stats.get("nan_count"):
        parts.append(f"{row.stats['nan_count']} NaN")
    if row.stats.get("inf_count"):
        parts.append(f"{row.stats['inf_count']} Inf")
    return ", ".join(parts)


def count_noun(n: int, noun: str) -> str:
    """>>> count_noun(1, "array"), count_noun(3, "call")
    ('1 array', '3 calls')
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(hist: Sequence | None) -> str:
    """A histogram row ``[lo, hi, c0, ...]`` as block characters (empty bins as spaces).

    >>> sparkline([0.0, 1.0, 0, 1, 4, 2])
    ' ▂█▄'
    """
    if not hist:
        return ""
    counts = hist[2:]
    top = max(counts) or 1
    return "".join(" " if c == 0 else _BARS[min(len(_BARS) - 1, int(c * len(_BARS) / (top + 1e-9)))] for c in counts)


# Inline styles: notebook front ends restyle tables (JupyterLab right-aligns every cell) and
# nbviewer/GitHub drop <style> blocks, but keep style attributes. Cells carry their own padding (a
# page with no table styles, Colab's or VS Code's output frame, would set them 2 px apart) and stay on
# one line (JupyterLab wraps cells, "(64, 1,|64)"; a wide table scrolls in its output instead).
CELL_STYLE = "padding:2px 6px;white-space:nowrap"
ALIGN_LEFT = f' style="text-align:left;{CELL_STYLE}"'
ALIGN_RIGHT = f' style="text-align:right;{CELL_STYLE}"'


def pre_html(text: str, attributes: str = "") -> str:
    """``text`` escaped in a ``<pre>``; ``attributes`` is nnx_lab's own markup, never user text.

    >>> pre_html("<b>x</b>", ' class="c"')
    '<pre class="c">&lt;b&gt;x&lt;/b&gt;</pre>'
    """
    return f"<pre{attributes}>{html.escape(text)}</pre>"
