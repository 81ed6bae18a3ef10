"""One call captured: :func:`capture_call` (``fn(*args)`` inside a :class:`~._capture.Capture`)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable

from flax import nnx

from ..graph import path_text  # noqa: F401 - the doctest's
from ._capture import Capture
from ._types import DEFAULT_TYPES

if TYPE_CHECKING:
    from ._types import TypesSpec

__all__ = ["capture_call"]


def capture_call(
    model: nnx.Module,
    fn: Callable,
    *args: object,
    types: TypesSpec = DEFAULT_TYPES,
    methods: bool | type = False,
    only: Any = ...,
    **kwargs: object,
) -> tuple[Any, nnx.State]:
    """``fn(*args, **kwargs)`` with ``model`` captured: ``(result, captured State)``.

    Args:
      model: the ``nnx.Module`` whose submodules are captured.
      fn: the model itself, one of its methods, or any function that calls it (an ``nnx.jit``
        function of the model included).
      *args: passed to ``fn``, with ``**kwargs``.
      types: the Variable types to keep, as for :class:`Capture`.
      methods: record every method's output too, as for :class:`Capture`.
      only: the modules to capture from, as for :class:`Capture`.

    Raises:
      TypeError, ValueError: as :class:`Capture` does; and whatever ``fn`` raises.

    >>> import jax.numpy as jnp
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> y, captured = capture_call(model, model, jnp.ones((1, 2)), methods=True)
    >>> sorted(path_text(p) for p, _ in nnx.to_flat_state(captured))
    ['__call__', 'layers[0].__call__']
    """
    with Capture(model, types=types, methods=methods, only=only) as cap:
        if inspect.ismethod(fn) and isinstance(fn.__self__, nnx.Module):
            fn = getattr(fn.__self__, fn.__name__)  # bound before the class was patched: bind again
        result = fn(*args, **kwargs)
    captured = cap.captured
    assert captured is not None  # set when the with block exits (Capture._disarm)
    return result, captured
