"""Upstream limits a capture meets, turned into one line each: a sow inside a jax scan, and calls
that need the model's graph exactly as it was (flax's own ``nnx.capture`` fails the same way)."""

from __future__ import annotations

import traceback
from typing import Iterable

from ._arming import ATTR


class SownInScan(TypeError):
    """A sow (or a recorded method output) inside a jax scan changed its carry; flax's own
    ``nnx.capture`` fails the same way there."""


class CapturesInGraph(ValueError):
    """A call that needs the model's graph exactly as it was (filters without a final ``...``,
    ``nnx.StateAxes``, ``in_axes`` from ``nnx.prefix``) met the ``__captures__`` entries capturing
    adds; flax's own ``nnx.capture`` fails the same way."""


def graph_refused(exc: BaseException) -> str | None:
    """What refused the armed model, when ``exc`` comes from the ``__captures__`` entries; else None."""
    text = str(exc)
    if isinstance(exc, ValueError) and "Non-exhaustive filters" in text and ATTR in text:
        return "filters without a final `...` (nnx.split, nnx.state) left them over"
    if isinstance(exc, ValueError) and "No axis found for path" in text and f"'{ATTR}'" in text:
        return "an nnx.StateAxes has no axis for them"
    if isinstance(exc, (ValueError, KeyError, TypeError)) and f"('{ATTR}'," in text:
        # the user's own code over the model's state (filters_guide's hand-written split) named them
        return f"code over the model's state met them ({type(exc).__name__}: {text.strip().splitlines()[0][:120]})"
    frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    if "flatten_axes" in frames[-4:] and (
        (isinstance(exc, ValueError) and ATTR in text) or (isinstance(exc, AttributeError) and "GetAttrKey" in text)
    ):
        # jax matching in_axes (made by nnx.prefix before the capture) against the model's state;
        # jax's own message about the mismatch can itself fail (AttributeError on a GetAttrKey).
        return "vmap's in_axes (from nnx.prefix, made before the capture) do not cover them"
    return None


def sown_in_scan(exc: BaseException, recorded: Iterable[str] = ()) -> bool:
    """Whether jax refused a scan's carry for the capture's entries: ``__captures__`` named in its
    message, or (a scan with ``graph=False``, whose carry holds the entries' dicts, not the attribute)
    the name of a method whose outputs were recorded among the keys that differ."""
    text = str(exc) if isinstance(exc, TypeError) else ""
    if not ("scan" in text and "carry" in text and "same pytree structure" in text):
        return False
    return f"'{ATTR}'" in text or any(f"key sets: {{'{name}'" in text or f", '{name}'" in text for name in recorded)
