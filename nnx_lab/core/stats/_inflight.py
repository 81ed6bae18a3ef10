"""At most :data:`MAX_PER_DEVICE` of nnx_lab's launches in flight on any device, so that the statistics
never fill a device's queue under the user's own steps.

Why (XLA's CPU client admits 32 computations in flight per device; a sharded step launched onto a
full device aborts the process): docs/guide/snapshot.md. Each launch of ours first waits (on the
launching thread, never one of XLA's, whose threads the user's all-reduce needs) for our oldest still
in flight on a device that holds ``MAX_PER_DEVICE`` of ours; a tick, which never waits, skips its
refresh instead (:func:`devices_busy`).

>>> devices_busy()
False
"""

from __future__ import annotations

import collections
import threading
from typing import TYPE_CHECKING

import jax

if TYPE_CHECKING:
    from ._types import Device, Value

__all__ = ["MAX_PER_DEVICE", "admit", "devices_busy", "launched"]

#: nnx_lab's launches in flight on one device, at most (XLA's CPU client: 32 in all, the user's included)
MAX_PER_DEVICE = 8

_lock = threading.Lock()
_flying: dict[Device, collections.deque[object]] = {}  # device -> our results in flight there, oldest first


def _devices(x: Value | None) -> tuple[Device, ...]:
    try:
        return tuple(x.sharding.device_set) if isinstance(x, jax.Array) else ()
    except RuntimeError:  # a deleted array: its launch fails and says so
        return ()


def _arrived(result: object) -> bool:
    try:
        leaves = [leaf for leaf in jax.tree.leaves(result) if isinstance(leaf, jax.Array)]
        return all(leaf.is_ready() for leaf in leaves)  # pyright: ignore[reportAttributeAccessIssue] - jax.Array's stub lacks is_ready (ArrayImpl has it)
    except RuntimeError:  # deleted or failed: nothing of it is left in flight
        return True


def _oldest_waiting(devices: tuple[Device, ...]) -> object:
    """Our oldest result still in flight on a full device among ``devices`` (None: room on all)."""
    with _lock:
        for device in devices:
            queue = _flying.get(device)
            while queue and _arrived(queue[0]):
                queue.popleft()
            if queue is not None and len(queue) >= MAX_PER_DEVICE:
                return queue[0]
    return None


def admit(x: Value | None) -> None:
    """Wait (this thread) until every device of ``x`` holds fewer than :data:`MAX_PER_DEVICE` of our
    launches, before launching on ``x``."""
    devices = _devices(x)
    while (oldest := _oldest_waiting(devices)) is not None:
        try:
            jax.block_until_ready(oldest)
        except RuntimeError:  # failed: it is no longer in flight (its owner's fetch says why)
            pass
        with _lock:
            for device in devices:
                queue = _flying.get(device)
                if queue and queue[0] is oldest:
                    queue.popleft()


def launched(x: Value | None, result: object) -> None:
    """Count ``result`` (just launched on ``x``'s devices) in flight until it has arrived."""
    devices = _devices(x)
    if not devices or not jax.tree.leaves(result):
        return
    with _lock:
        for device in devices:
            _flying.setdefault(device, collections.deque()).append(result)


def devices_busy() -> bool:
    """Whether some device already holds :data:`MAX_PER_DEVICE` of our launches (never waits)."""
    with _lock:
        devices = tuple(_flying)
    return _oldest_waiting(devices) is not None
