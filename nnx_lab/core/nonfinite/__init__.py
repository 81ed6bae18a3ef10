"""Non-finite forensics: which module call, and which primitive inside it, first made NaN or Inf.

What it does, step by step: docs/guide/nonfinite.md; the parts: docs/ARCHITECTURE.md.
"""

from __future__ import annotations

from typing import Any, Callable

from ._report import DISPLAY_HOOKS, MARIMO_HOOKS, NonfiniteReport
from ._search import search

__all__ = ["DISPLAY_HOOKS", "MARIMO_HOOKS", "find_nonfinite", "NonfiniteReport"]


def find_nonfinite(fn: Callable, *args: Any, **kwargs: Any) -> NonfiniteReport:
    """Where NaN/Inf first appears in ``fn(*args, **kwargs)``: forward, backward or already in the input.

    ``fn`` may be wrapped in ``jax.jit``/``nnx.jit`` (its Python function is run, outside any jit).
    Raises a one-line ``TypeError`` when ``fn`` is not callable or no module is in the arguments,
    and a ``ValueError`` when the forward is finite but ``fn`` returns no scalar loss to differentiate.
    """
    return search(fn, args, kwargs)
