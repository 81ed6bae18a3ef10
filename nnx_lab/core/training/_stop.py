"""Stop a training loop at its first non-finite step, without making any step wait on the host
(docs/guide/training.md): each tick launches one fused ``isfinite`` program over the step's logged
scalars and gradient leaves and reads the *previous* step's flags (the current step is already
queued behind them); ``keep_last_good`` rotates two on-device copies of the state.

>>> import jax.numpy as jnp
>>> guard = StepGuard()
>>> guard.arm()
>>> guard.log(1, {"loss": jnp.float32(1.0)}, {"w": jnp.ones(2)})
>>> guard.tick(1, last=False)
>>> guard.log(2, {"loss": jnp.float32(jnp.nan)}, {"w": jnp.ones(2)})
>>> guard.tick(2, last=True)
Traceback (most recent call last):
...
nnx_lab.core.training._stop.NonFiniteStep: step 2: loss is NaN/Inf; call nnx_lab.find_nonfinite(loss_fn, model, batch) with this step's batch
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from ..graph import path_key, path_text
from ..render import format_bytes
from ..text import one_line

__all__ = ["LastGood", "NonFiniteStep", "StepGuard"]
logger = logging.getLogger("nnx_lab")

HINT = "call nnx_lab.find_nonfinite(loss_fn, model, batch) with this step's batch"


class NonFiniteStep(FloatingPointError):
    """A step logged a NaN or Inf: ``step`` (its number, as the viewer counts steps), ``what`` (the
    logged scalars' names and ``grads.<path>`` of the gradient leaves that were not finite)."""

    def __init__(self, step: int, what: tuple[str, ...], restorable: bool = False):
        self.step, self.what = step, tuple(what)
        shown = ", ".join(self.what[:3]) + (f" and {len(self.what) - 3} more" if len(self.what) > 3 else "")
        tail = "; viewer.restore_last_good() puts back the state from before it" if restorable else ""
        super().__init__(f"step {step}: {shown} {'is' if len(self.what) == 1 else 'are'} NaN/Inf; {HINT}{tail}")


@dataclasses.dataclass(frozen=True)
class LastGood:
    """The model's and optimizer's state (``nnx.State``, on the device) from before step ``step``."""

    step: int
    model: nnx.State | None
    optimizer: nnx.State | None
    nbytes: int  # of this one copy (the guard holds up to two while a loop runs)


@jax.jit
def _finite(leaves: list) -> jax.Array:
    # One program per structure: a bool per leaf, one pass over each leaf. x * 0 is 0 where x is
    # finite and NaN where it is NaN or Inf; its sum is one vectorised add per element (XLA:CPU's
    # all(isfinite(x)) takes twice as long: 167 against 82 us on an MLP's 2.7 MB of gradients), and
    # it cannot overflow. (A max(|x|) is no check: XLA's CPU max drops NaN.)
    return jnp.stack([jnp.isfinite(jnp.sum(x * jnp.zeros((), x.dtype))) for x in leaves])


def _plan(grads: Any) -> tuple[list[str], list[int]]:
    names, indices = [], []
    for i, (path, leaf) in enumerate(jax.tree_util.tree_flatten_with_path(grads)[0]):
        if isinstance(leaf, jax.Array) and jnp.issubdtype(leaf.dtype, jnp.inexact):
            keys = (path_key(k) for k in path)
            names.append(path_text(("grads", *(k for k in keys if k != "value"))))  # an nnx.State's ".value"
            indices.append(i)
    return names, indices


def _copy(tree: nnx.State) -> nnx.State:
    # A fresh buffer for every array (the next step may donate the model's own); queued, not waited for.
    return jax.device_put(tree, may_alias=False)


def _nbytes(tree: object) -> int:
    return sum(int(getattr(x, "nbytes", 0)) for x in jax.tree.leaves(tree))


class StepGuard:
    """A loop's non-finite check (see the module docstring). ``objects()``: the model and optimizer
    whose state ``keep_last_good`` copies (either may be None)."""

    def __init__(self, objects: Callable[[], tuple[Any, Any]] = lambda: (None, None)):
        self._objects = objects
        self.armed = self.keep = False
        self._logged: tuple[int, dict, Any] | None = None  # this step's scalars and grads, until its tick
        self._pending: tuple[int, jax.Array, list[str]] | None = None  # flags launched, not read
        self._copies: list[LastGood] = []  # the state before the oldest unread step, then newer
        self.last_good: LastGood | None = None  # kept after a stop, for restore()
        self.stopped: NonFiniteStep | None = None
        self._plans: dict = {}  # (gradient treedef, dtypes) -> (names, indices of the float leaves)
        self.problem = ""  # a step that could not be checked, said in the status line

    def arm(self, keep_last_good: bool = False, before_step: int | None = None) -> None:
        """Check every step from now; ``keep_last_good``: keep the state, copied now when ``before_step``
        (the step about to run) is given, else at the next tick."""
        if self.armed and keep_last_good == self.keep:
            return
        self.disarm()
        self.armed, self.keep, self.stopped, self.last_good = True, keep_last_good, None, None
        if keep_last_good and before_step is not None:
            self._keep(before_step)

    def disarm(self) -> None:
        """Stop checking; forget the flags and copies (a stop's ``last_good`` stays)."""
        self.armed, self._pending, self._logged, self._copies = False, None, None, []

    def log(self, step: int, scalars: dict | None, grads: Any) -> None:
        """What ``step`` logged (by reference; the last value of each name; read by its tick)."""
        if not self.armed:
            return
        if self._logged is None or self._logged[0] != step:
            self._logged = (step, {}, None)
        if scalars:
            self._logged[1].update(scalars)
        if grads is not None:
            self._logged = (step, self._logged[1], grads)

    def tick(self, step: int, last: bool) -> None:
        """``step`` ended: launch its flags, read the previous step's (waiting), and its own if they
        arrived (or ``last``: the loop ends here). Raises :class:`NonFiniteStep`."""
        if not self.armed:
            return
        logged, self._logged = self._logged, None
        launched = None
        try:
            launched = self._launch(step, logged) if logged is not None and logged[0] == step else None
        except NonFiniteStep:
            raise
        except Exception as e:  # noqa: BLE001 - a boundary (the loop's step): said in the status line
            logger.warning("nnx_lab: step %d could not be checked for NaN/Inf", step, exc_info=True)
            self.problem = f"stop on NaN/Inf: step {step} not checked ({one_line(e)})"
        previous, self._pending = self._pending, launched
        if previous is not None:
            self._read(previous)  # one step behind: step `step` is already queued after it
        if launched is not None and (last or launched[1].is_ready()):  # pyright: ignore[reportAttributeAccessIssue] - an ArrayImpl's (jax.Array's stub has none)
            self._pending = None
            self._read(launched)
        if self.keep and not last:
            self._keep(step + 1)

    def _launch(self, step: int, logged: tuple[int, dict, Any]) -> tuple[int, jax.Array, list[str]] | None:
        names: list[str] = []
        leaves: list = []
        bad_now: list[str] = []  # host numbers: known at once
        for name, value in logged[1].items():
            if isinstance(value, jax.Array):
                if jnp.issubdtype(value.dtype, jnp.inexact):
                    names.append(name)
                    leaves.append(value)
            elif isinstance(value, (int, float, np.number, np.ndarray)) and np.size(value) == 1:
                if not math.isfinite(float(np.real(value))) or not math.isfinite(float(np.imag(value))):
                    bad_now.append(name)
        if logged[2] is not None:
            flat, treedef = jax.tree.flatten(logged[2])
            key = (treedef, tuple(getattr(x, "dtype", None) for x in flat))
            plan = self._plans.get(key)
            if plan is None:  # a structure's names and float leaves, worked out once
                if len(self._plans) >= 8:
                    self._plans.clear()
                plan = self._plans[key] = _plan(logged[2])
            names += plan[0]
            leaves += [flat[i] for i in plan[1]]
        if bad_now:
            self._stop(step, bad_now)
        if not leaves:
            return None
        flags = _finite(leaves)
        flags.copy_to_host_async()
        return step, flags, names

    def _read(self, pending: tuple[int, jax.Array, list[str]]) -> None:
        step, flags, names = pending
        ok = np.asarray(flags)
        if not ok.all():
            self._stop(step, [name for name, good in zip(names, ok) if not good])
        self._copies = [c for c in self._copies if c.step > step]  # the state before a good step: not needed

    def _stop(self, step: int, what: list[str]) -> None:
        before = [c for c in self._copies if c.step == step]
        self.last_good = before[0] if before else None
        self.disarm()
        self.stopped = NonFiniteStep(step, tuple(what), restorable=self.last_good is not None)
        raise self.stopped

    def _keep(self, before_step: int) -> None:
        states = [None if obj is None else _copy(nnx.state(obj)) for obj in self._objects()]
        self._copies.append(LastGood(before_step, states[0], states[1], _nbytes(states)))

    def status(self) -> list[str]:
        """What the status line says: the stop, or the memory the kept state costs."""
        if self.stopped is not None:
            return [f"stopped at step {self.stopped.step}: " + str(self.stopped).split(": ", 1)[1].split("; ")[0]]
        if self.armed and self.keep and self._copies:
            kept = f"last good state kept: up to 2 × {format_bytes(self._copies[-1].nbytes)} on the device"
            return [p for p in (f"stop on NaN/Inf: {kept}", self.problem) if p]
        return [self.problem] if self.armed and self.problem else []

    def restore(self) -> int:
        """Put the kept state from before the bad step back into the model and optimizer (a copy of
        it: restoring twice works); the step it preceded. A ValueError when none is kept."""
        good = self.last_good
        if good is None:
            raise ValueError("no last good state is kept: use track(..., stop_on_nonfinite=True, keep_last_good=True)")
        for obj, state in zip(self._objects(), (good.model, good.optimizer)):
            if obj is not None and state is not None:
                nnx.update(obj, _copy(state))
        return good.step
