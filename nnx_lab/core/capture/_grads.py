"""Gradients at every ``perturb`` point: flax's four-step recipe in one call, the model unchanged."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

import jax
import jax.numpy as jnp
from flax import nnx

from ._capture import Capture
from ._options import check_model
from ._types import DEFAULT_TYPES, resolve_types, type_names

if TYPE_CHECKING:
    from ._types import TypesSpec


@dataclasses.dataclass(frozen=True)
class GradResult:
    """What :func:`intermediate_grads` returns: the loss, the forward captures, the gradients
    (unpacks as those three), and every Variable type sown or perturbed during the loss."""

    loss: Any
    forward: nnx.State
    grads: nnx.State
    seen_types: tuple[type, ...] = ()

    def __iter__(self):
        return iter((self.loss, self.forward, self.grads))


class NoPerturbations(ValueError):
    """The loss function ran no ``Module.perturb`` under the perturbation types."""


def _split_types(types: tuple[type, ...]) -> tuple[tuple[type, ...], tuple[type, ...]]:
    perturb = tuple(t for t in types if issubclass(t, nnx.Perturbation))
    forward = tuple(t for t in types if not issubclass(t, nnx.Perturbation))
    return forward or DEFAULT_TYPES, perturb or (nnx.Perturbation,)


def intermediate_grads(
    model: nnx.Module,
    loss_fn: Callable,
    *args: object,
    types: TypesSpec = DEFAULT_TYPES,
    methods: bool | type = False,
    only: Any = ...,
    **kwargs: object,
) -> GradResult:
    """The gradient of ``loss_fn(model, *args, **kwargs)`` (a scalar) at every ``perturb`` point.

    flax's four-step recipe (``Module.perturb``): (1) find the perturbation points and their
    shapes (here with ``jax.eval_shape``: nothing runs on the device) and make zeros; (2) call the
    loss with ``init=`` those zeros captured; (3) ``jax.value_and_grad`` with respect to them;
    (4) return the forward captures and the gradients side by side. ``types`` may name
    Perturbation subclasses (what ``perturb`` was given) and forward types (default
    ``Intermediate``). Everything runs on a copy of the model: its Variables, RNG counts and
    batch statistics are exactly as before. The gradient runs eagerly, op by op; give an
    ``nnx.jit`` loss function to run its forward and backward passes compiled.

    Args:
      model: the ``nnx.Module`` (it is not changed).
      loss_fn: called as ``loss_fn(model, *args, **kwargs)``; returns a scalar.
      *args: passed to ``loss_fn``, with ``**kwargs``.
      types: Perturbation subclasses and forward Variable types (default ``Intermediate``).
      methods: record every method's output too, as for :class:`Capture`.
      only: the modules to capture from, as for :class:`Capture`.

    Raises:
      NoPerturbations: (a ``ValueError``) nothing was perturbed.
      TypeError: the loss is not a scalar, or ``model`` is not an ``nnx.Module``.

    >>> import jax.numpy as jnp
    >>> class Scale(nnx.Module):
    ...     def __call__(self, x):
    ...         x = self.perturb("x", x)
    ...         self.sow(nnx.Intermediate, "y", 3 * x)
    ...         return 3 * x
    >>> loss, forward, grads = intermediate_grads(Scale(), lambda m, x: m(x).sum(), jnp.ones(2))
    >>> float(loss), grads["x"].get_value().tolist(), forward["y"].get_value()[0].tolist()
    (6.0, [3.0, 3.0], [3.0, 3.0])
    """
    check_model(model)
    forward_types, perturb_types = _split_types(resolve_types(types))
    graphdef, state = nnx.split(model)
    state = jax.tree.map(lambda x: x, state)  # fresh Variables: the copy cannot write into the model

    def run(perturbations, kinds, with_methods):
        copy = nnx.merge(graphdef, jax.tree.map(lambda x: x, state))
        with Capture(copy, types=kinds, methods=with_methods, only=only, init=perturbations) as cap:
            loss = loss_fn(copy, *args, **kwargs)
        return loss, cap.captured, cap.seen_types

    seen: list = []

    def perturbed_shapes():
        loss, captured, sown = run(None, perturb_types, False)
        seen.extend(sown)  # the types pass through untraced
        return loss, captured

    shape_loss, shapes = jax.eval_shape(perturbed_shapes)
    if getattr(shape_loss, "shape", None) != ():
        what = f"shape {tuple(shape_loss.shape)}" if hasattr(shape_loss, "shape") else type(shape_loss).__name__
        raise TypeError(f"the loss function must return a scalar; it returned {what}")
    if not list(nnx.to_flat_state(shapes)):
        others = ", ".join(t.__name__ for t in seen) or "nothing"
        raise NoPerturbations(
            f"no module called perturb() under {', '.join(type_names(perturb_types))} (sown during the loss: {others})"
        )
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def loss_and_forward(perturbations):
        loss, forward, more = run(perturbations, forward_types, methods)
        seen.extend(t for t in more if t not in seen)
        return loss, forward

    (loss, forward), grads = jax.value_and_grad(loss_and_forward, has_aux=True)(zeros)
    return GradResult(loss, forward, grads, tuple(seen))
