"""What the live-refresh tests share: a model whose steps are real device work, and a clock to
inject into a Watcher (``Watcher(model, clock=clock)``) so that a test makes a refresh due by moving
time instead of resetting the engine's state. Importable from every test folder: pytest puts
``tests/`` on ``sys.path`` for ``tests/conftest.py`` (as ``unchanged.py``).
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nnx_lab.core import compat


class Holder(nnx.Module):
    """One parameter, ``w``."""

    def __init__(self, w):
        self.w = nnx.Param(w)


@jax.jit
def slow_step(w):
    """Tens of milliseconds of device work on this machine: a queue of them is real."""
    for _ in range(8):
        w = jnp.tanh(w @ w.T @ w / w.shape[0])
    return w


def held_model(size: int = 512) -> Holder:
    """A ``Holder`` of a ``size``×``size`` normal matrix, with ``slow_step`` compiled for it."""
    model = Holder(jnp.asarray(np.random.default_rng(0).normal(size=(size, size)).astype(np.float32)))
    jax.block_until_ready(slow_step(compat.get_value(model.w)))
    return model


def queue_steps(model: Holder, n: int):
    """Queue ``n`` slow steps on the device (nothing waits for them); the last step's array."""
    w = compat.get_value(model.w)
    for _ in range(n):
        w = slow_step(w)
        compat.set_value(model.w, w)
    return w


class Clock:
    """A clock for ``Watcher(clock=...)``: time moves only when told."""

    #: longer than any interval a throttle can ask for (a budget's interval is its cost / budget)
    LATER = 1e6

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def later(self) -> None:
        """Move time on so far that a refresh is due."""
        self.now += self.LATER
