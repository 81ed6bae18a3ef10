"""One logged scalar, from the loop's value to the host's curve: what counts as a real scalar
(:func:`accept`; never waits for the device), reading computed device scalars (:func:`host_values`, one
transfer) and one name's bounded curve (:class:`Curve`). Used by :class:`~._scalars.ScalarStore`."""

from __future__ import annotations

import functools
import logging
import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

__all__ = ["Curve", "accept", "host_values", "is_real"]


class Curve:
    """One name's curve: at most ``capacity`` (step, value) points, a point every ``stride`` steps."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.steps = np.zeros(capacity, np.int64)
        self.values = np.zeros(capacity, np.float64)
        self.n = 0
        self.stride = 1
        self.latest: tuple[int, float] | None = None

    def add(self, step: int, value: float) -> None:
        self.latest = (step, value)
        if self.n and step < self.steps[self.n - 1] + self.stride:
            return  # between two kept points: only the latest value keeps it
        if self.n == self.capacity:
            # Full: keep every second point (the first included), then a point every 2x steps.
            half = (self.capacity + 1) // 2
            self.steps[:half] = self.steps[::2]
            self.values[:half] = self.values[::2]
            self.n, self.stride = half, self.stride * 2
            if step < self.steps[self.n - 1] + self.stride:
                return
        self.steps[self.n], self.values[self.n] = step, value
        self.n += 1

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        steps, values = self.steps[: self.n], self.values[: self.n]
        if self.latest is not None and (not self.n or self.latest[0] > steps[-1]):
            steps = np.append(steps, self.latest[0])
            values = np.append(values, self.latest[1])
        return steps.copy(), values.copy()


def accept(value: object) -> tuple[jax.Array | float | None, str | None]:
    """(what to keep, None) for a real scalar: the device array itself (read when computed) or a
    Python float; (None, why not) otherwise. Never waits for the device."""
    if isinstance(value, Tracer):
        return None, "a traced value (logged inside jit/grad?)"
    if isinstance(value, jax.Array):
        if value.shape and math.prod(value.shape) != 1:
            return None, f"not a scalar (shape {tuple(value.shape)})"
        if not is_real(value.dtype):
            return None, f"not a real number (dtype {value.dtype})"
        if value.is_deleted():
            return None, "a deleted (donated) array"
        return value, None
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.size != 1:
            return None, f"not a scalar (shape {array.shape})"
        if not is_real(array.dtype):
            return None, f"not a real number (dtype {array.dtype})"
        return float(array.reshape(-1)[0]), None
    if isinstance(value, numbers.Real):
        try:
            number = float(value)
        except Exception as e:  # noqa: BLE001 - a boundary (the user's __float__ may raise anything): said in the status
            logging.getLogger("nnx_lab").debug("nnx_lab: a logged number's __float__ raised", exc_info=True)
            return None, f"not a float ({type(e).__name__})"
        if not isinstance(number, float):
            return None, f"not a float (__float__ gave {type(number).__name__})"
        return number, None
    return None, f"not a number ({type(value).__name__})"


@functools.cache  # asked at every logged step: jnp.issubdtype is slow
def is_real(dtype: np.dtype) -> bool:
    # jax's issubdtype knows bfloat16 and the float8 types (numpy sees them as void); a PRNG key's
    # dtype (key<fry>) is none of numpy's: np.dtype() raises on it.
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return False
    return bool(np.dtype(dtype).kind in "biu" or jnp.issubdtype(dtype, jnp.floating))


def host_values(xs: list) -> list[float]:
    """The values of computed device scalars, in one transfer; on several processes, each one's own
    copy (a scalar is replicated)."""
    got = jax.device_get([x if x.is_fully_addressable else x.addressable_data(0) for x in xs])
    return [float(np.asarray(g).reshape(-1)[0]) for g in got]
