"""Device memory: who holds every live array (``memory()`` -> :class:`Ledger`) and whether a step
will fit (``memory(step, *args)`` -> :class:`StepPlan`); see docs/guide/memory.md. UI-free.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, overload

from ..shell import shell_namespace
from ._data import DISPLAY_HOOKS, MARIMO_HOOKS, DeviceTotal, Freeing, Ledger, Row
from ._ledger import UNREACHED_NAME, build_ledger
from ._plan import Donation, StepPlan, plan

NO_NAMESPACE = (
    "no IPython shell and no namespace= given: every array is unreached; "
    "nnx_lab.memory(namespace=globals()) names the holders"
)

__all__ = [
    "DISPLAY_HOOKS",
    "DeviceTotal",
    "Donation",
    "Freeing",
    "Ledger",
    "MARIMO_HOOKS",
    "Row",
    "StepPlan",
    "UNREACHED_NAME",
    "memory",
]


@overload
def memory(step: None = None, /, *, namespace: dict | None = None) -> Ledger: ...


@overload
def memory(
    step: Callable[..., object], /, *args: object, namespace: dict | None = None, **kwargs: object
) -> StepPlan: ...


def memory(step: object = None, /, *args: object, namespace: dict | None = None, **kwargs: object) -> Ledger | StepPlan:
    """With no step: the live ledger of ``namespace`` (default: the IPython shell's ``user_ns``).
    With a callable ``step``: its compiled memory plan for ``*args, **kwargs`` (nothing executed)."""
    if step is None:
        if args or kwargs:
            raise TypeError("nnx_lab.memory: arguments were given without a step: memory(step, *args)")
        if namespace is not None and not isinstance(namespace, dict):
            raise TypeError(f"nnx_lab.memory: namespace must be a dict, got {type(namespace).__name__}")
        if namespace is None:
            namespace = shell_namespace()
            if namespace is None:
                return replace(build_ledger({}), note=NO_NAMESPACE)
        return build_ledger(namespace)
    if not callable(step):
        raise TypeError(
            f"nnx_lab.memory: the first argument must be a step to compile (a function or an nnx Module), "
            f"got {type(step).__name__}; memory() with no argument is the ledger"
        )
    if namespace is not None:
        kwargs["namespace"] = namespace  # the step's own keyword
    return plan(step, args, kwargs)
