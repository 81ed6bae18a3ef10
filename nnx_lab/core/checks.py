"""The bounds of nnx_lab's numeric options and the checks of names and paths a user writes (no
jax or IPython import)."""

from __future__ import annotations

import keyword
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
    """``value`` if it is a finite number in [low, high] (``(low, high]`` with ``low_open``); else ValueError.

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
    ok = (isinstance(value, int) if integer else isinstance(value, (int, float))) and not isinstance(value, bool)
    if ok:
        try:
            ok = (low < value if low_open else low <= value) and value <= high
        except TypeError:
            ok = False
    if not ok:
        raise ValueError(f"{what} must be {kind} in {span}, got {clip(safe_repr(value), 60)}")
    return value


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
