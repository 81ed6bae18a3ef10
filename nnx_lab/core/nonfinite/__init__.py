"""Non-finite forensics: which module call, and which primitive inside it, first made NaN or Inf.

``find_nonfinite(fn, *args, **kwargs)`` runs ``fn`` (a forward pass or a loss, called as the user
calls it, its arguments holding one or more nnx Modules) once more, eagerly, on a copy of its
arguments, with every module call's inputs and outputs recorded (``_record``; no ``nnx.capture``
needed, so it works on flax 0.11 too). It answers a :class:`NonfiniteReport`:

- ``input``: a leaf of the arguments (the batch, a Variable) was already non-finite;
- ``forward``: the first module call, in completion order (the innermost first), whose output holds
  NaN/Inf while its inputs and Variables were finite, and the primitive inside it (``_jaxpr``);
- ``backward``: when the forward is finite and ``fn`` returns a scalar, the module call whose output
  cotangent is finite but whose input cotangent or own Param gradient is not, and the primitive;
- None: everything finite.

The caller's model and arguments are never changed (the runs use ``nnx.split``/``merge`` copies).
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
