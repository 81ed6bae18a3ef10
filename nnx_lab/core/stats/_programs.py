"""One compiled program per refresh: every statistics kernel of a model in one executable (why: one
place in the device's queue instead of one per array, docs/ARCHITECTURE.md "One program per refresh").

A program is compiled once per model *structure*: the kernel and the (shape, dtype, sharding) of
every array, in order. It is compiled on a background thread the second time a structure is
refreshed (a structure seen once is often never refreshed again), or at once for a viewer; until it is ready, a refresh
launches the per-array kernels, whose executables are shared between all models.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Sequence

import jax

from ..fallbacks import slower
from ._compiling import in_background
from ._program import COMPILER_OPTIONS, Program

if TYPE_CHECKING:
    from ._types import Kernel, StructureKey

__all__ = ["COMPILER_OPTIONS", "COMPILING", "MAX_PROGRAMS", "Program", "compiling", "program_for", "programs_compiled"]

MAX_PROGRAMS = 32  # structures kept compiled (least recently used dropped)
# Beyond this many arrays a structure keeps the per-array kernels: XLA's compile time grows with the
# number of parameters (measured: 1,000 arrays 1.2 s, 10,000 arrays 136 s of a core, the viewer skipping
# refreshes all the while), which would cost more than the queue places it saves.
MAX_PROGRAM_ARRAYS = 1024
MAX_SEEN_ONCE = 1024  # structures seen once, remembered by hash only (a key may hold 10,000 specs)
_programs: OrderedDict[StructureKey, Program | str] = OrderedDict()  # structure -> a Program, COMPILING or _FAILED
_seen_once: OrderedDict[int, None] = OrderedDict()  # hash(structure) -> None
_lock = threading.Lock()
_compiled = 0  # programs compiled so far


def structure_key(kernels: Sequence[Kernel], arrays: Sequence[jax.Array]) -> StructureKey | None:
    """The key of a program: the kernels and every array's (shape, dtype, sharding); None when some
    sharding cannot be hashed."""
    key = tuple((id(k), x.shape, x.dtype, x.sharding) for k, x in zip(kernels, arrays))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def device_groups(arrays: Sequence[object]) -> list[list[int]]:
    """Indices of the device arrays that may share a program (one program runs on one set of
    devices), in order; host values are left out."""
    groups: dict[frozenset, list[int]] = {}
    for j, x in enumerate(arrays):
        if isinstance(x, jax.Array):
            groups.setdefault(frozenset(x.sharding.device_set), []).append(j)
    return list(groups.values())


COMPILING = "compiling"


def program_for(
    kernels: Sequence[Kernel],
    arrays: Sequence[jax.Array],
    *,
    background: bool,
    eager: bool = False,
    key: StructureKey | None = None,
) -> Program | str | None:
    """The compiled program for this structure; :data:`COMPILING` while it is being compiled on a
    thread; None when there is none (yet, or ever). The second time a structure is asked for (the
    first with ``eager``), its program is compiled: on a thread with ``background`` (the
    caller goes on with per-array kernels meanwhile), else right here."""
    if len(arrays) > MAX_PROGRAM_ARRAYS:
        return None
    key = structure_key(kernels, arrays) if key is None else key
    if key is None:
        return None
    with _lock:
        entry = _programs.get(key)
        if isinstance(entry, Program):
            _programs.move_to_end(key)
            return entry
        if entry is not None:
            return COMPILING if entry == COMPILING else None  # compiling, or failed: never retried
        if not eager and hash(key) not in _seen_once:  # a collision only compiles a program early
            _seen_once[hash(key)] = None
            if len(_seen_once) > MAX_SEEN_ONCE:
                _seen_once.popitem(last=False)
            return None
        _programs[key] = COMPILING
    specs = [jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding) for x in arrays]
    if background:
        # Not a daemon: the interpreter waits for a compile to finish before it exits (XLA aborts
        # the process when finalization interrupts a compile).
        threading.Thread(target=_compile_in_turn, args=(key, tuple(kernels), specs), name="nnx_lab-program").start()
        return None
    return _compile(key, tuple(kernels), specs)


def compiling() -> bool:
    """Whether some program is being compiled (or waits its turn) right now."""
    with _lock:
        return any(v == COMPILING for v in _programs.values())


def programs_compiled() -> int:
    """Programs compiled so far (part of :func:`.stats.kernel_cache_size`)."""
    return _compiled


_FAILED = "failed"  # never retried: the per-array kernels describe this structure


def _remember(key: StructureKey, value: Program | str) -> None:
    """Keep a compiled (or failed) structure; beyond MAX_PROGRAMS the least recently used goes."""
    _programs[key] = value
    _programs.move_to_end(key)
    settled = [k for k, v in _programs.items() if v != COMPILING]
    for k in settled[:-MAX_PROGRAMS]:
        del _programs[k]


one_at_a_time = threading.Lock()  # background compiles run one after another (a model's chunks queue up)


def _compile_in_turn(key: StructureKey, kernels: tuple[Kernel, ...], specs: list[jax.ShapeDtypeStruct]) -> None:
    with one_at_a_time, in_background():  # the user's own compiles come first (see _kernels)
        _compile(key, kernels, specs)


def _compile(key: StructureKey, kernels: tuple[Kernel, ...], specs: list[jax.ShapeDtypeStruct]) -> Program | None:
    global _compiled
    try:
        program = Program(kernels, specs)
    except Exception as e:  # noqa: BLE001 - boundary (a compile thread): the per-array kernels describe it, row by row
        slower("a structure's statistics program failed to compile: per-array kernels instead", error=e)
        program = None
    with _lock:
        if program is None:
            _remember(key, _FAILED)
        else:
            _remember(key, program)
            _compiled += 1
    return program
