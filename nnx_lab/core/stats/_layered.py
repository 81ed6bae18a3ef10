"""Kernels mapped over a stacked Variable's layer axis: one row of statistics per layer (see
``core.snapshot._layers`` for which Variables are stacked)."""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import jax

if TYPE_CHECKING:
    from ._types import Kernel

_LAYERED: dict[
    tuple[Kernel, int], jax.stages.Wrapped
] = {}  # (kernel, axis) -> the mapped kernel, compiled once per spec


@overload
def layered(kernel: Kernel, axis: int) -> Kernel: ...
@overload
def layered(kernel: None, axis: int) -> None: ...
def layered(kernel: Kernel | None, axis: int) -> Kernel | None:
    """``kernel`` mapped over ``axis``: every result gains a leading layer dimension (None stays None)."""
    if kernel is None:
        return None
    key = (kernel, axis)
    if key not in _LAYERED:
        _LAYERED[key] = jax.jit(jax.vmap(kernel, in_axes=axis))
    return _LAYERED[key]


def layered_origin(fn: Kernel) -> tuple[Kernel, int] | None:
    """``(kernel, axis)`` when ``fn`` is a kernel :func:`layered` mapped over a layer axis, else None
    (its executables are kept on disk under that name: ``_stats._first_call``)."""
    return next((key for key, mapped in list(_LAYERED.items()) if mapped is fn), None)


def layered_cache_size() -> int:
    """Executables compiled for the layered kernels (part of ``kernel_cache_size``)."""
    return sum(f._cache_size() for f in list(_LAYERED.values()))  # pyright: ignore[reportAttributeAccessIssue] - jax.jit's wrapper has no public count of its executables
