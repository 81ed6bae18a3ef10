"""A summary's numbers and shapes as text: counts (``1.23M``), bytes (``4.37 MiB``), parameter tables,
pytrees of arrays (``float32[8,10]@P('data', None)``), and the bytes arrays take."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, SupportsInt

from ..text import clip
from ._formulas import nbytes

__all__ = ["bytes_text", "count_text", "describe", "leaves_bytes", "params_count", "params_text", "variables_text"]


def count_text(n: SupportsInt | None) -> str:
    """``1234567`` as ``1.23M``; exact below 10,000."""
    if n is None:
        return "-"
    n = int(n)
    if abs(n) < 10_000:
        return str(n)
    for div, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{_three(n / div)}{suffix}"
    return str(n)


def _three(v: float) -> str:
    """Three significant digits, never in exponent notation (``1000``, ``68.7``, ``4.37``)."""
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def bytes_text(n: SupportsInt | None) -> str:
    if n is None:
        return "-"
    n = int(n)
    for div, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= div:
            return f"{_three(n / div)} {suffix}"
    return f"{n} B"


def params_count(table: dict, param_types: Collection[str]) -> tuple[int, int]:
    """(count, bytes) of the parameters in ``table`` ({Variable type: [count, bytes]}): the types
    named in ``param_types`` (``nnx.Param`` and its subclasses), never batch statistics nor RNG state."""
    kept = [v for name, v in table.items() if name in param_types]
    return sum(c for c, _ in kept), sum(b for _, b in kept)


def params_text(table: dict, param_types: Collection[str]) -> str:
    """``count (bytes)`` of the parameters in ``table`` (see :func:`params_count`); "" when none."""
    count, nbytes = params_count(table, param_types)
    return f"{count_text(count)} ({bytes_text(nbytes)})" if count else ""


def variables_text(table: dict, param_types: Collection[str] = ()) -> str:
    """Every Variable type in ``table`` with its count and bytes, the parameters first:
    ``Param 128 (512 B), BatchStat 128 (512 B)``."""
    names = sorted(table, key=lambda name: name not in param_types)  # stable: the walk's order otherwise
    return ", ".join(f"{name} {count_text(table[name][0])} ({bytes_text(table[name][1])})" for name in names)


def leaves_bytes(leaves: list) -> int:
    return sum(nbytes(x) for x in leaves if hasattr(x, "dtype"))


def _sharding_text(x: object) -> str:
    from jax.core import Tracer

    from .. import compat

    # a tracer's own .sharding raises with a message jax builds by searching the program: its aval's
    sharding = getattr(x.aval, "sharding", None) if isinstance(x, Tracer) else getattr(x, "sharding", None)
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is None or not getattr(mesh, "shape", None) or all(s is None for s in spec):
        return ""
    return "@" + compat.spec_text(spec)


def describe(x: object, limit: int = 300) -> str:
    """A pytree of arrays as text: ``float32[8,10]``, ``(float32[2], {'a': int32[]})``, sharding as ``@P(...)``."""
    return clip(_describe(x, 0), limit)


def _describe(x: Any, level: int) -> str:  # a leaf of the user's pytree: duck-typed
    if level > 6:
        return "…"
    if isinstance(getattr(x, "shape", None), tuple) and hasattr(x, "dtype"):  # nnx.Rngs has any attribute
        dtype = getattr(x.dtype, "name", None) or str(x.dtype)
        return f"{dtype}[{','.join(str(d) for d in x.shape)}]{_sharding_text(x)}"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        named: Any = x  # a namedtuple
        return (
            f"{type(x).__name__}(" + ", ".join(f"{k}={_describe(v, level + 1)}" for k, v in zip(named._fields, x)) + ")"
        )
    if isinstance(x, (tuple, list)):
        inner = ", ".join(_describe(v, level + 1) for v in x)
        return f"({inner}{',' if len(x) == 1 else ''})" if isinstance(x, tuple) else f"[{inner}]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!s}: {_describe(v, level + 1)}" for k, v in x.items()) + "}"
    if x is None or isinstance(x, (bool, int, float, str)):
        return clip(repr(x), 40)
    return f"<{type(x).__name__}>"
