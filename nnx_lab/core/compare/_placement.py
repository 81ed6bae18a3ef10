"""Where a compared pair's arrays go: both on the devices of the one on a device, PRNG keys as their
key data; and which program reads them: pairs grouped by devices, small pairs of one spec stacked,
at most :data:`MAX_PROGRAM_ARRAYS` arrays a program (:func:`plan_programs`)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["MAX_PROGRAM_ARRAYS", "STACK_BYTES", "key_data", "placed_pair", "plan_programs"]


def placed_pair(a: Any, b: Any) -> tuple[Any, Any]:
    """Both arrays on the devices of the one that is on a device (b follows a's sharding)."""
    a, b = key_data(a), key_data(b)
    if isinstance(a, jax.Array):
        if not isinstance(b, jax.Array) or b.sharding != a.sharding:
            b = jax.device_put(b, a.sharding)
        return a, b
    if isinstance(b, jax.Array):
        return jax.device_put(a, b.sharding), b
    return jnp.asarray(a), jnp.asarray(b)


def key_data(x: Any) -> Any:
    """A PRNG key array's key data (compared bit for bit); any other array as it is."""
    return jax.random.key_data(x) if _is_key(x.dtype) else x


@functools.cache  # asked per array, decided per dtype
def _is_key(dtype: Any) -> bool:
    return jnp.issubdtype(dtype, jax.dtypes.prng_key)


@functools.lru_cache(maxsize=256)  # a few shardings per model, asked per array
def _devices(sharding: Any) -> tuple:
    """The ids of a sharding's devices: pairs on the same ones share a program."""
    return tuple(sorted(d.id for d in sharding.device_set))


#: A pair whose arrays are single-device and each at most this many bytes is "small": reduced stacked
#: with the other small pairs of its shapes, dtypes and layer axis (one vmapped kernel reads them
#: all: XLA's compile time follows the kernels, and a model of 10,000 small Variables has a few).
STACK_BYTES = 256 * 1024
#: Small pairs of one spec per stacked batch (a power of two), and the most bytes a batch stacks per
#: side (its transient copy): a full batch is a program of its own, compiled once and run per batch.
STACK_PAIRS = 128
STACK_BATCH_BYTES = 16 * 2**20
#: The most arrays (both sides) one program reads, as the viewer's (``core.stats``): XLA's compile time
#: and memory grow faster than the number of its parameters (one program over 2,000 pairs: 49 s, 1.9 GB).
MAX_PROGRAM_ARRAYS = 1024


def plan_programs(placed: list[tuple[Any, Any, int | None]]) -> list[list[tuple[tuple[int, ...], int, bool]]]:
    """The programs of placed pairs ``(a, b, layer_axis)``: per program its batches, each
    ``(pair indices, real count, stacked)``; a stacked batch's indices are padded to a power of two
    with its first pair (the padding's partials are dropped), so that its program is compiled once
    per spec and size. Every program runs on one device group and reads at most
    :data:`MAX_PROGRAM_ARRAYS` arrays; a full batch (:data:`STACK_PAIRS` pairs, or fewer larger ones:
    :data:`STACK_BATCH_BYTES`) is a program of its own, the rest are packed in order."""
    groups: dict[tuple, dict[Any, list[int]]] = {}
    for k, (a, b, axis) in enumerate(placed):
        specs = groups.setdefault(_devices(a.sharding), {})
        small = a.nbytes <= STACK_BYTES and b.nbytes <= STACK_BYTES and len(a.sharding.device_set) == 1
        key = (a.shape, a.dtype, b.shape, b.dtype, axis) if small else ("alone", k)
        specs.setdefault(key, []).append(k)
    programs: list[list[tuple[tuple[int, ...], int, bool]]] = []
    for specs in groups.values():
        rest: list[tuple[tuple[int, ...], int, bool]] = []
        for key, members in specs.items():
            if key[0] == "alone":
                rest.append(((members[0],), 1, False))
                continue
            a, b = placed[members[0]][:2]
            per = max(a.nbytes, b.nbytes, 1)
            size = max(1, min(STACK_PAIRS, _floor_pow2(STACK_BATCH_BYTES // per)))
            full = len(members) - len(members) % size
            programs.extend([[(tuple(members[s : s + size]), size, True)] for s in range(0, full, size)])
            left = members[full:]
            if len(left) == 1:
                rest.append(((left[0],), 1, False))
            elif left:
                padded = tuple(left) + (left[0],) * (_ceil_pow2(len(left)) - len(left))
                rest.append((padded, len(left), True))
        program: list = []
        arrays = 0
        for batch in rest:
            n = 2 * len(batch[0])
            if program and arrays + n > MAX_PROGRAM_ARRAYS:
                programs.append(program)
                program, arrays = [], 0
            program.append(batch)
            arrays += n
        if program:
            programs.append(program)
    return programs


def _floor_pow2(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _ceil_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()
