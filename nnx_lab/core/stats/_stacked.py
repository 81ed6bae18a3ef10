"""Stacked shards: an array whose distinct shards sit one per device on several devices, wrapped without a
copy as one array over a 1-D mesh of those devices (``jax.make_array_from_single_device_arrays``) and
reduced by a :func:`stacked` kernel (the statistics kernel inside ``shard_map``, one row per shard, no
collective) where each shard lives: arrays on the same devices share one program (see :mod:`._shards`)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, overload

import jax
import numpy as np

if TYPE_CHECKING:
    from ._types import Device, Kernel, Outputs, Value

__all__ = [
    "STACK",
    "Stacked",
    "own_mesh",
    "stack_sharding",
    "stacked",
    "stacked_array",
    "stacked_cache_size",
    "stacked_origin",
]


STACK = "stack"  # a part slot filled by a stacked array (see the module docstring)


class Stacked:
    """The "layer axis" of a stacked part in a launch plan's ``layers``: its kernels are
    :func:`stacked` over these devices, one row per shard."""

    def __init__(self, devices: tuple[Device, ...]):
        self.devices = devices

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stacked) and other.devices == self.devices

    def __hash__(self) -> int:
        return hash(self.devices)

    def __repr__(self) -> str:
        return f"Stacked({len(self.devices)} devices)"


# devices -> their 1-D mesh's sharding (one object each: programs keyed by it match)
_MESHES: dict[tuple[Device, ...], jax.sharding.NamedSharding] = {}
_STACKED: dict[tuple[Kernel, tuple[Device, ...]], _StackedKernel] = {}  # (kernel, devices) -> it over every shard


def stack_sharding(devices: tuple[Device, ...]) -> jax.sharding.NamedSharding:
    if devices not in _MESHES:
        mesh = jax.sharding.Mesh(np.asarray(devices, dtype=object), ("shards",))
        _MESHES[devices] = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("shards"))
    return _MESHES[devices]


def stacked_array(
    x: jax.Array, ks: tuple[int, ...], shape: tuple[int, ...], sharding: jax.sharding.Sharding
) -> jax.Array:
    """``x``'s shards ``ks`` side by side along axis 0, over their devices' 1-D mesh (no copy)."""
    try:
        return jax.make_array_from_single_device_arrays(shape, sharding, [x.addressable_data(k) for k in ks])
    except (RuntimeError, ValueError):  # deleted or donated: reduced as is, its kernel's row says so
        return x


@contextlib.contextmanager
def own_mesh(mesh: jax.sharding.Mesh | jax.sharding.AbstractMesh | None) -> Iterator[None]:
    """Our 1-D mesh as the context mesh while a stacked kernel or program is traced or run: the user's
    (``jax.set_mesh``, Explicit axes) would refuse a ``shard_map`` over another mesh."""
    with jax.set_mesh(mesh):  # pyright: ignore[reportArgumentType] - ours are concrete meshes (stack_sharding), typed as NamedSharding.mesh
        yield


class _StackedKernel:
    """A jitted ``shard_map`` over a 1-D mesh of shards, called (and lowered) under that mesh."""

    def __init__(self, fn: jax.stages.Wrapped, mesh: jax.sharding.Mesh | jax.sharding.AbstractMesh):
        self._fn, self._mesh = fn, mesh

    def __call__(self, x: Value, /) -> Outputs:
        with own_mesh(self._mesh):
            return self._fn(x)

    def lower(self, *args: object) -> jax.stages.Lowered:
        with own_mesh(self._mesh):
            return self._fn.lower(*args)

    def _cache_size(self) -> int:
        return self._fn._cache_size()  # pyright: ignore[reportAttributeAccessIssue] - jax.jit's wrapper has no public count of its executables


@overload
def stacked(kernel: Kernel, devices: tuple[Device, ...]) -> Kernel: ...
@overload
def stacked(kernel: None, devices: tuple[Device, ...]) -> None: ...
def stacked(kernel: Kernel | None, devices: tuple[Device, ...]) -> Kernel | None:
    """``kernel`` run on each device's block of a stacked array (``shard_map``, no collective):
    every result gains a leading dimension, one row per shard (None stays None)."""
    if kernel is None:
        return None
    key = (kernel, devices)
    if key not in _STACKED:
        sharding = stack_sharding(devices)
        spec = sharding.spec
        per_block = lambda block: jax.tree.map(lambda r: r[None], kernel(block))  # noqa: E731
        _STACKED[key] = _StackedKernel(
            jax.jit(jax.shard_map(per_block, mesh=sharding.mesh, in_specs=spec, out_specs=spec, check_vma=False)),
            sharding.mesh,
        )
    return _STACKED[key]


def stacked_origin(fn: Kernel) -> tuple[Kernel, tuple[Device, ...]] | None:
    """``(kernel, devices)`` when ``fn`` is a :func:`stacked` kernel, else None."""
    return next((key for key, mapped in list(_STACKED.items()) if mapped is fn), None)


def stacked_cache_size() -> int:
    """Executables compiled for the stacked kernels (part of ``kernel_cache_size``)."""
    return sum(f._cache_size() for f in list(_STACKED.values()))
