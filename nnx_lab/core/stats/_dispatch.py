"""Per-array kernel calls: each ``kernel(x)`` dispatched without waiting, its executable loaded from the
disk cache (or compiled and kept there) the first time its spec is seen; first compiles of several specs
run side by side on threads (XLA compiles without the GIL). A failure becomes the array's StatsError."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import jax

from ..compat import outside_context_mesh
from ..fallbacks import slower
from ..text import one_line
from ._executables import loaded_executable, prepare_executable
from ._inflight import admit, launched
from ._kernels import KERNELS
from ._layered import layered_origin
from ._table import KERNEL_ERRORS, StatsError

if TYPE_CHECKING:
    from ._types import Kernel, Outputs, Spec, Value

_log = logging.getLogger("nnx_lab")
_dispatched: set[Spec] = set()  # (kernel, shape, dtype, sharding) run before: compiled


def _spec(kernel: Kernel, x: Value) -> Spec | None:
    key = (id(kernel), x.shape, x.dtype, getattr(x, "sharding", None), getattr(x, "weak_type", False))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _first_call(kernel: Kernel, x: Value) -> Outputs | StatsError:
    """:func:`call` for a spec not run before in this process: its executable loaded from the disk
    cache, or compiled and kept there (see :mod:`._executables`), first."""
    spec = _spec(kernel, x)
    kernel_id = _kernel_id(kernel)
    if spec is not None and kernel_id is not None:
        try:
            with outside_context_mesh():
                prepare_executable(kernel, kernel_id, x, spec)
        except Exception:  # noqa: BLE001 - boundary: the optional disk cache never fails a kernel call
            _log.debug("nnx_lab cache: no executable prepared for %r", spec, exc_info=True)
    return call(kernel, x)


def _kernel_id(kernel: Kernel) -> int | tuple[str, int, int] | None:
    """What names ``kernel`` in the disk cache's keys: its place in KERNELS, or for a kernel mapped
    over a stacked Variable's layer axis (``_layers.layered``) that place and the axis; None for
    anything else (not kept on disk)."""
    if kernel in KERNELS:
        return KERNELS.index(kernel)
    origin = layered_origin(kernel)
    if origin is not None and origin[0] in KERNELS:
        return ("vmap", KERNELS.index(origin[0]), origin[1])
    return None


def call(kernel: Kernel, x: Value) -> Outputs | StatsError:
    """``kernel(x)``, by the executable the disk cache gave for its spec where there is one; launched
    once ``x``'s devices have room for it (:mod:`._inflight`: a refresh's hundreds of per-array kernels
    never fill a device's queue under the user's steps)."""
    admit(x)
    result = _call(kernel, x)
    launched(x, result)
    return result


def _call(kernel: Kernel, x: Value) -> Outputs | StatsError:
    try:
        spec = _spec(kernel, x)
        executable = loaded_executable(spec) if spec is not None else None
        if executable is not None:
            try:
                return executable(x)
            except KERNEL_ERRORS as e:  # jax.jit below says what is wrong, or copes
                if not (isinstance(x, jax.Array) and x.is_deleted()):  # a donated buffer is expected, not slower
                    slower("a cached statistics kernel failed: jax.jit runs it instead", error=e)
        with outside_context_mesh():  # the user's jax.set_mesh would refuse one shard's or one device's array
            return kernel(x)
    except KERNEL_ERRORS as e:  # a buffer deleted or donated (RuntimeError), a spec jax refuses
        deleted = isinstance(x, jax.Array) and x.is_deleted()
        _log.debug("nnx_lab: a statistics kernel failed (its row says so)", exc_info=True)
        return StatsError(one_line(e), deleted=deleted)


def dispatch(calls: list[tuple[Kernel, Value]]) -> list[Outputs | StatsError]:
    """Run each ``kernel(x)`` (results stay on device; a failure becomes a StatsError). Specs never
    run before are compiled side by side on threads first: a first snapshot compiles one
    executable per distinct spec, and XLA compiles without holding the GIL."""
    results: list[Outputs | StatsError | None] = [None] * len(calls)
    first: dict[Spec, int] = {}
    for j, (kernel, x) in enumerate(calls):
        key = _spec(kernel, x)
        if key is not None and key not in _dispatched and key not in first:
            first[key] = j
    if len(first) > 1 and threads_see_jax_config():
        with ThreadPoolExecutor(min(len(first), os.cpu_count() or 2), thread_name_prefix="nnx_lab-compile") as pool:
            futures = {j: pool.submit(_first_call, *calls[j]) for j in first.values()}
        for j, future in futures.items():
            results[j] = future.result()
    else:
        for j in first.values():
            results[j] = _first_call(*calls[j])
    for j, (kernel, x) in enumerate(calls):
        if results[j] is None:
            results[j] = call(kernel, x)
    _dispatched.update(key for key, j in first.items() if not isinstance(results[j], StatsError))
    return results  # pyright: ignore[reportReturnType] - every slot is filled: first calls, then the rest


def threads_see_jax_config() -> bool:
    """Whether work done on another thread sees this thread's jax settings: not under a thread-local
    setting (``jax.default_device(...)``, x64) that worker threads would not inherit, nor with several
    processes (each must launch the same programs in the same order): then all runs on this thread."""
    x64 = jax.config.jax_enable_x64  # pyright: ignore[reportAttributeAccessIssue] - jax's Config sets its flags as attributes at run time
    default_device = jax.config.jax_default_device  # pyright: ignore[reportAttributeAccessIssue] - jax's Config sets its flags as attributes at run time
    return not x64 and default_device is None and jax.process_count() == 1
