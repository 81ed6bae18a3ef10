"""Many small arrays of one spec, one launch: a first look at a model of repeated blocks launches a
few grouped kernels instead of one kernel per array (why and the figures: docs/ARCHITECTURE.md, "A
first look launches by spec").

A spec met at least :data:`SIZES`\\ ``[-1]`` times is launched :data:`SIZES`\\ ``[0]`` (then
``[1]``) arrays at a time by ``_kernels.grouped``, the rest one by one (:mod:`._dispatch`). A grouped
executable missing from memory and disk is compiled on a thread after this look (one at a time, after
the user's own compiles), so the next look launches it. Only arrays of at most ``SMALL_ELEMENTS``
elements on one device are grouped (bigger arrays' kernels take longer than their dispatch); nothing
is compiled with the disk cache off.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import jax

from ..fallbacks import slower
from ._compiling import SMALL_ELEMENTS, in_background
from ._dispatch import dispatch, threads_see_jax_config
from ._executables import cache_dir, grouped_executable
from ._inflight import admit, launched
from ._kernels import KERNELS
from ._programs import one_at_a_time
from ._table import KERNEL_ERRORS

if TYPE_CHECKING:
    from ._executables import Executable
    from ._table import StatsError
    from ._types import Kernel, Outputs, Value

__all__ = ["SIZES", "compiling_grouped", "dispatch_grouped", "grouped_launches", "look_done"]

_log = logging.getLogger("nnx_lab")

#: Arrays per grouped launch, largest first (a 256-array executable loads in about 15 ms, 1,024 in 50-120 ms).
SIZES = (256, 16)
_lock = threading.Lock()
_wanted: dict[
    tuple, tuple[Kernel, jax.ShapeDtypeStruct, int]
] = {}  # (kernel, k, spec) -> (kernel, spec, k) to compile, in order
_worker: threading.Thread | None = None
# Set once the look that wanted a compile has its numbers (:func:`look_done`): the compile's lowering,
# Python holding the GIL, would otherwise slow that first look (measured: +250 ms at 1,000 Variables).
_look_done = threading.Event()
LOOK_WAIT_S = 5.0  # a look whose numbers are never fetched holds the compiles back no longer than this
LOOK_SETTLE_S = 0.5  # and then the rest of the look (its rows, its payload) goes first
_launches = 0  # grouped launches made in this process


def _groupable(kernel: Kernel, x: Value) -> bool:
    """Whether ``x`` (the first of its spec) may be launched with others: one of KERNELS, a small
    array on one device."""
    return (
        kernel in KERNELS
        and isinstance(x, jax.Array)
        and isinstance(x.sharding, jax.sharding.SingleDeviceSharding)
        and x.size <= SMALL_ELEMENTS
    )


def dispatch_grouped(calls: list[tuple[Kernel, Value]]) -> list[tuple[Outputs | StatsError, list[int]]]:
    """Run each ``kernel(x)`` as :func:`._dispatch.dispatch` does, the arrays of a spec met often
    launched together: per launch, its device results (each with one row per array) and the
    positions in ``calls`` of its arrays, in order."""
    groups: dict[tuple, list[int]] = {}
    if jax.process_count() == 1 and len(calls) >= SIZES[-1]:
        for j, (kernel, x) in enumerate(calls):
            try:  # (kept cheap: a first look meets 10,000 arrays)
                key = (id(kernel), x.shape, x.dtype, x.sharding, x.weak_type)  # pyright: ignore[reportAttributeAccessIssue] - a host value (numpy) raises: skipped
            except AttributeError:  # a host value
                continue
            groups.setdefault(key, []).append(j)
    done: list[tuple[Outputs | StatsError, list[int]]] = []
    wanted: list[tuple[Kernel, jax.Array, int]] = []
    grouped = [False] * len(calls)
    for members in groups.values():
        kernel, x = calls[members[0]]
        if len(members) < SIZES[-1] or not _groupable(kernel, x):
            continue
        start = 0
        for k in SIZES:
            if len(members) - start < k:
                continue
            executable = grouped_executable(kernel, x, k, compile=False)  # pyright: ignore[reportArgumentType] - _groupable: a jax.Array
            if executable is None:
                wanted.append((kernel, x, k))  # pyright: ignore[reportArgumentType] - _groupable: a jax.Array
                continue
            while len(members) - start >= k:
                part = members[start : start + k]
                result = _launch(executable, [calls[j][1] for j in part])
                if result is None:
                    break
                done.append((result, part))
                for j in part:
                    grouped[j] = True
                start += k
    rest = [j for j in range(len(calls)) if not grouped[j]]
    done.extend((r, [j]) for j, r in zip(rest, dispatch([calls[j] for j in rest])))
    if wanted:
        _look_done.clear()
    for want in wanted:  # compiled once this look has its numbers
        _want(*want)
    return done


def look_done() -> None:
    """The look that launched the last grouped calls has its numbers: wanted compiles may start."""
    _look_done.set()


def _launch(executable: Executable, xs: list[Value]) -> Outputs | None:
    """One grouped launch (None when it fails: a buffer deleted or donated; the per-array kernels say which)."""
    global _launches
    admit(xs[0])
    try:
        result = executable(*xs)
    except KERNEL_ERRORS:
        _log.debug("nnx_lab: a grouped statistics launch failed; per-array kernels instead", exc_info=True)
        return None
    launched(xs[0], result)
    _launches += 1
    return result


def grouped_launches() -> int:
    """Grouped launches made so far in this process."""
    return _launches


def _want(kernel: Kernel, x: jax.Array, k: int) -> None:
    """Compile ``grouped(kernel, k)`` for ``x``'s spec on a thread, kept on disk (once per spec and size)."""
    global _worker
    if cache_dir() is None or not threads_see_jax_config():
        return
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding, weak_type=x.weak_type)
    key = (KERNELS.index(kernel), k, x.shape, str(x.dtype), x.sharding, x.weak_type)
    with _lock:
        if key in _wanted or key in _tried:
            return
        _wanted[key] = (kernel, spec, k)
        if _worker is None:
            # Not a daemon: the interpreter waits for a compile to finish before it exits (XLA aborts
            # the process when finalization interrupts a compile).
            _worker = threading.Thread(target=_compile_wanted, name="nnx_lab-grouped")
            _worker.start()


_tried: set[tuple] = set()  # compiled (or failed): never again in this process


def _compile_wanted() -> None:
    global _worker
    settled = False
    while True:
        with _lock:
            if not _wanted:
                _worker = None
                return
            key = next(iter(_wanted))
            kernel, spec, k = _wanted[key]
        if not settled or not _look_done.is_set():  # first, and whenever a new look wants more
            _look_done.wait(LOOK_WAIT_S)
            time.sleep(LOOK_SETTLE_S)
            settled = True
        try:
            # after the user's own compiles; a viewer's programs and these compile one after another
            with one_at_a_time, in_background():
                grouped_executable(kernel, spec, k, compile=True)
        except Exception as e:  # noqa: BLE001 - boundary (a compile thread): the per-array kernels go on
            slower("a grouped statistics kernel failed to compile: per-array kernels instead", error=e)
        with _lock:
            del _wanted[key]
            _tried.add(key)


def compiling_grouped() -> bool:
    """Whether a grouped kernel is being compiled (or waits its turn) right now."""
    with _lock:
        return bool(_wanted)
