"""The types the statistics engine's modules hand one another (for annotations: imported under
``TYPE_CHECKING``, nothing here runs with the engine)."""

from __future__ import annotations

from typing import Protocol, TypeAlias

import jax
import numpy as np

from ..compat import Device

__all__ = ["Device", "HostOutputs", "Kernel", "Outputs", "Spec", "StructureKey", "Value"]

#: An array to describe: on its device(s), or a host value made a numpy array (``_stats.PendingStats``).
Value: TypeAlias = jax.Array | np.ndarray
#: A kernel's or program's small device results (floats, counts and, for integers, the exact extremes).
Outputs: TypeAlias = tuple[jax.Array, ...]
#: Those results fetched to the host.
HostOutputs: TypeAlias = tuple[np.ndarray, ...]
#: What one kernel call is compiled for: (id(kernel), shape, dtype, sharding, weak type) (``_dispatch._spec``).
Spec: TypeAlias = tuple[int, tuple[int, ...], np.dtype, jax.sharding.Sharding | None, bool]
#: A program's structure: per array, (id(kernel), shape, dtype, sharding) (``_programs.structure_key``).
StructureKey: TypeAlias = tuple[tuple[int, tuple[int, ...], np.dtype, jax.sharding.Sharding], ...]


class Kernel(Protocol):
    """A statistics kernel (``_kernels.KERNELS``), one mapped over a layer axis (``_layered``) or over a
    stacked array's shards (``_stacked``): called on one array, lowered for the disk cache."""

    def __call__(self, x: Value, /) -> Outputs: ...

    def lower(self, *args: object) -> jax.stages.Lowered: ...
