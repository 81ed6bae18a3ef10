"""The bounds of nnx_lab's numeric options and the checks of names and paths a user writes (no
jax or IPython import)."""

from __future__ import annotations

import keyword
import math
import numbers
import operator
import re
from typing import Any

from .text import clip, safe_repr

#: bounds of the numeric options (inclusive), shared by the Python API and the magics
MAX_RATE = 100.0  # refreshes per second: more says nothing a person can see
MAX_BINS = 1024  # histogram bins per array: more is a large message for a 200-pixel cell
MAX_ROWS = 1_000_000


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check_number(
    value: Any, what: str, low: float, high: float, *, integer: bool = False, low_open: bool = False
) -> Any:
    """``value`` as a Python number (:func:`as_number`) if it is one in [low, high] (``(low, high]`` with ``low_open``); else ValueError.

    NaN, infinities and booleans are refused: a NaN rate stops a throttle and is not valid JSON.

    >>> check_number(2, "max_rate", 0, 100, low_open=True)
    2
    >>> check_number(float("nan"), "max_rate", 0, 100, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: max_rate must be a number in (0, 100], got nan
    """
    kind = "an integer" if integer else "a number"
    span = f"{'(' if low_open else '['}{_number_text(low)}, {_number_text(high)}]"
    number = as_number(value, integer=integer)
    if number is None or math.isnan(number) or not ((low < number if low_open else low <= number) and number <= high):
        raise ValueError(f"{what} must be {kind} in {span}, got {clip(safe_repr(value), 60)}")
    return number


def as_number(value: Any, *, integer: bool = False) -> int | float | None:
    """``value`` as a Python ``int`` (``integer``: only an integer) or ``float`` when it is a real
    number: a Python, numpy (``np.float32(0.1)``, ``np.int64(2)``) or 0-d array scalar (numpy or jax,
    read to the host); else None. Booleans (Python, numpy or arrays of them) are not numbers here.

    >>> import numpy as np
    >>> as_number(np.float32(0.5)), as_number(np.int64(3), integer=True), as_number(np.array(2.5))
    (0.5, 3, 2.5)
    >>> as_number(True), as_number(2.0, integer=True), as_number("1"), as_number(np.ones(2))
    (None, None, None, None)
    """
    dtype = getattr(value, "dtype", None)
    if isinstance(value, bool) or getattr(dtype, "kind", None) == "b":
        return None
    try:
        if integer or isinstance(value, numbers.Integral):
            return operator.index(value)  # np.int64, a 0-d integer array; never 2.0
        if isinstance(value, numbers.Real):
            return float(value)
        kind = getattr(dtype, "kind", None)
        if getattr(value, "shape", None) == () and kind in ("i", "u", "f"):
            return float(value) if kind == "f" else operator.index(value)  # a 0-d array (numpy or jax)
    except (TypeError, ValueError):  # a tracer (jax's ConcretizationTypeError is a TypeError), or no number
        return None
    return None


def is_python_name(text: Any) -> bool:
    """Whether ``text`` is a name Python can bind or look up: an identifier that is not a keyword
    (soft keywords such as ``match`` are names). :func:`check_name` adds what nnx_lab may bind.

    >>> is_python_name("loss_fn"), is_python_name("match"), is_python_name("class"), is_python_name("f(x)")
    (True, True, False, False)
    """
    return isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)


def is_dotted_name(text: Any) -> bool:
    """Whether ``text`` is a name or names joined by dots (``model``, ``trainer.model``): what can be
    looked up again without evaluating anything.

    >>> is_dotted_name("trainer.model"), is_dotted_name("model.blocks[0]"), is_dotted_name("a..b")
    (True, False, False)
    """
    return isinstance(text, str) and all(is_python_name(part) for part in text.split("."))


_PATH_TEXT = re.compile(r"(?P<first>[A-Za-z_]\w*)((\.\w+)|(\[\d+\])|(/\w+))*")


def looks_like_path(text: str) -> bool:
    """Whether ``text`` is written as a module path (``blocks[0].attn``, ``blocks/0/attn``,
    ``blocks.0.attn``): names, indices and attribute steps only, starting with a Python name.

    >>> looks_like_path("blocks[7]"), looks_like_path("blocks.0.attn"), looks_like_path("None")
    (True, True, False)
    >>> looks_like_path("nnx.PathContains('a')"), looks_like_path("1/0")
    (False, False)
    """
    match = _PATH_TEXT.fullmatch(text)
    return match is not None and is_python_name(match["first"])
