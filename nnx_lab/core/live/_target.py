"""What a :class:`Watcher` watches, resolved to the current object at every refresh: an object by
weak reference (:class:`ObjectTarget`), an ``nnx.split`` pair by weak references to its states
(:class:`PairTarget`), or a name looked up afresh each time (:class:`NameTarget`: a functional loop
rebinds its model every step; docs/guide/watch.md).

>>> from flax import nnx
>>> namespace = {"model": nnx.Linear(2, 2, rngs=nnx.Rngs(0))}
>>> target = NameTarget("model", namespace)
>>> type(target.resolve()).__name__, target.label
('Linear', 'following `model`')
>>> namespace["model"] = nnx.Linear(2, 5, rngs=nnx.Rngs(1))        # rebound: the new model
>>> target.resolve().out_features
5
>>> namespace["model"] = 3
>>> target.resolve(), target.problem
(None, '`model` is an int, not a model')
>>> namespace["model"] = list(range(10**6))   # decided from a few entries, never walked
>>> target.resolve(), target.problem
(None, '`model` is a list of 1,000,000 entries, none of its first and last ones a Variable, array or Module: not a model')
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sys
import weakref
from collections.abc import Mapping, Reversible
from typing import Any, Callable, Iterator

import jax
import numpy as np
from flax import nnx
from flax.nnx import graph as nnx_graph

from ..checks import is_dotted_name
from ..graph import check_inspectable, split_pair
from ..shell import shell_namespace
from ..text import a_kind, one_line

logger = logging.getLogger("nnx_lab")


class Target:
    """Resolves to the object to describe now, or None (``problem`` says why; ``final``: for good)."""

    label = ""  # what the status line says about the target ("following `model`"), or nothing
    final = True  # whether a None from resolve() means gone for good (else: missing for now)
    problem = ""

    def resolve(self) -> Any | None:
        raise NotImplementedError


def _weak(obj: Any, on_gone: Callable[[], None] | None) -> Callable[[], Any]:
    """A weak reference to ``obj`` where Python allows one (plain dicts hold no model of their own)."""
    try:
        return weakref.ref(obj, None if on_gone is None else (lambda _ref: on_gone()))
    except TypeError:
        return lambda obj=obj: obj


class ObjectTarget(Target):
    """One object, by weak reference."""

    def __init__(self, obj: Any, on_gone: Callable[[], None] | None = None):
        check_inspectable(obj)  # a TypeError for a non-model, here and not in a loop
        self._type = type(obj)

        def gone(_finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
            if _finalizing():  # interpreter exit: modules are torn down (logging too); no one reads a status
                return
            self.problem = _gone_problem(self._type)
            if on_gone is not None:
                on_gone()

        self._ref = _weak(obj, gone)

    def resolve(self) -> Any | None:
        obj = self._ref()
        if obj is None and not self.problem:
            self.problem = _gone_problem(self._type)
        return obj


def _gone_problem(model_type: type) -> str:
    """Why a held model is gone, and where it went when a loop rebound its name
    (``model, loss = train_step(model, ...)`` returns a new model each step): the names of the
    notebook that hold a model of the same class now, with the line that follows one."""
    problem = "the model was garbage-collected"
    try:
        namespace = shell_namespace() or {}  # outside IPython there is no notebook to look in
        names = [
            name for name, value in list(namespace.items()) if type(value) is model_type and not name.startswith("_")
        ][:3]
    except Exception:  # noqa: BLE001 - a boundary (a weakref callback): a hint only, the model is gone all the same
        logger.debug("nnx_lab: the notebook's names could not be searched for the model", exc_info=True)
        return problem
    if not names:
        return problem
    listed = ", ".join(f"`{name}`" for name in names)
    return (
        f"{problem}; {listed} now hold{'s' if len(names) == 1 else ''} another {model_type.__name__} "
        f"(a loop rebinding it?): nnx_lab.watch({names[0]!r}) follows the name"
    )


class PairTarget(Target):
    """``nnx.split``'s ``(graphdef, state, ...)``: the graphdef (no arrays) held, each state by weak reference."""

    def __init__(self, obj: tuple, on_gone: Callable[[], None] | None = None):
        self._graphdef = obj[0]
        self._states = [_weak(state, on_gone) for state in obj[1:]]

    def resolve(self) -> Any | None:
        states = [ref() for ref in self._states]
        if any(state is None for state in states):
            self.problem = "the state was garbage-collected"
            return None
        return (self._graphdef, *states)


class NameTarget(Target):
    """A name (``model``, or dotted: ``trainer.model``) looked up in ``namespace`` at every refresh.

    A name that is missing or bound to something that is not a model is a ``problem`` for now (the
    next refresh looks again), never the end: rebinding it to a model recovers.
    """

    final = False

    def __init__(self, name: str, namespace: Mapping[str, Any]):
        if not is_dotted_name(name.strip() if isinstance(name, str) else name):
            raise ValueError(
                f"a name to follow is a Python name, dotted or not (model, trainer.model); "
                f"got {one_line(repr(name), 80)}"
            )
        self.name, self._namespace = name.strip(), namespace
        self._parts = self.name.split(".")
        self.label = f"following `{self.name}`"
        self._held: list = []  # [the object the name was just evaluated to] inside held()

    @contextlib.contextmanager
    def held(self, obj: Any) -> Iterator[None]:
        """Inside the block the name resolves to ``obj`` without being looked up: a magic evaluates its
        TARGET once for its line (``trainer.model`` may be a property with side effects); the
        refreshes after it follow the name again."""
        self._held = [obj]
        try:
            yield
        finally:
            self._held = []

    def resolve(self) -> Any | None:
        obj = self.lookup()
        if obj is None:
            return None
        if split_pair(obj) is None:
            try:
                check_inspectable(obj)
            except TypeError:
                self.problem = f"`{self.name}` is {a_kind(type(obj).__name__)}, not a model"
                return None
            if not _may_hold_model(obj):
                n = len(obj) if isinstance(obj, (list, tuple, Mapping)) else 0
                self.problem = (
                    f"`{self.name}` is {a_kind(type(obj).__name__)} of {n:,} entries, none of its first "
                    "and last ones a Variable, array or Module: not a model"
                )
                return None
        return obj

    def lookup(self) -> Any | None:
        """The object bound to the name now, or None (``problem`` says why)."""
        if self._held:
            return self._held[0]
        first, *rest = self._parts
        try:
            obj = self._namespace[first]
        except KeyError:
            self.problem = f"`{first}` is not defined"
            return None
        for i, attr in enumerate(rest):
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                self.problem = f"`{'.'.join(self._parts[: i + 1])}` has no attribute `{attr}`"
                return None
            except Exception as e:  # noqa: BLE001 - a boundary (the user's property raised): said, looked up again later
                logger.debug("nnx_lab: following `%s` raised", self.name, exc_info=True)
                self.problem = f"`{'.'.join(self._parts[: i + 2])}` raised {one_line(e)}"
                return None
        if obj is None:
            self.problem = f"`{self.name}` is None"
        return obj


#: entries looked at from each end of a plain list, tuple or dict; entries looked at in all
_SAMPLE, _BUDGET = 8, 512


def _ends(container: Any) -> list:
    """At most ``_SAMPLE`` entries from each end of a list, tuple or mapping (its values): O(1)."""
    if isinstance(container, Mapping):
        values = container.values()
        head = list(itertools.islice(values, _SAMPLE))
        try:
            many = len(container) > _SAMPLE
            tail = list(itertools.islice(reversed(values), _SAMPLE)) if many and isinstance(values, Reversible) else []
        except TypeError:  # a mapping whose values cannot be reversed: its first entries only
            tail = []
        return head + tail
    if len(container) <= 2 * _SAMPLE:
        return list(container)
    return [*container[:_SAMPLE], *container[-_SAMPLE:]]


def _may_hold_model(obj: object) -> bool:
    """Whether a followed name's plain container (list, tuple, dict) looks like it holds a model,
    decided from at most ``_BUDGET`` entries (breadth first, the first and last ones of each
    container). Walking it is what a refresh does, at every cell: ``model = list(range(10**6))``
    would hang the kernel there, so a container whose sampled entries hold no Variable, array or
    graph node counts as no model."""
    queue, seen = [obj], 0
    while queue and seen < _BUDGET:
        x = queue.pop(0)
        seen += 1
        if isinstance(x, (nnx.Variable, jax.Array, np.ndarray, jax.ShapeDtypeStruct)) or nnx_graph.is_graph_node(x):
            return True
        if isinstance(x, (list, tuple, Mapping)):
            if not x and x is obj:
                return True  # an empty container: an empty table, at no cost
            try:
                queue.extend(_ends(x))
            except Exception:  # noqa: BLE001 - a boundary (a user container's methods): the walk decides
                logger.debug("nnx_lab: a followed container could not be sampled", exc_info=True)
                return True
    return False


class OptimizerSource:
    """The optimizer whose state a viewer shows beside the rows (``watch(model, optimizer=...)``):
    an object held by weak reference, or a followed :class:`NameTarget` looked up at every refresh
    (a functional loop rebinds its optimizer with its model: ``model, optimizer = nnx.merge(...)``).

    An object that is not an optimizer (nothing with ``.opt_state``) is a TypeError here; a followed
    name that is missing or holds something else is a ``problem`` for now (the next refresh looks again).
    """

    def __init__(self, optimizer: Any):
        self.problem = ""
        if isinstance(optimizer, NameTarget):
            self.name: str | None = optimizer.name
            self._follow: NameTarget | None = optimizer
            self._ref: Callable[[], Any] = lambda: None
            if self.resolve() is None:  # it must hold an optimizer now: an error at once, not a status
                raise TypeError(f"optimizer: {self.problem}")
            return
        if not hasattr(optimizer, "opt_state"):
            raise TypeError(
                f"optimizer= takes an nnx.Optimizer (something with .opt_state), not {a_kind(type(optimizer).__name__)}"
            )
        self.name, self._follow, self._ref = None, None, _weak(optimizer, None)

    def resolve(self) -> Any | None:
        """The optimizer now, or None (``problem`` says why when a followed name holds none)."""
        if self._follow is None:
            return self._ref()
        obj = self._follow.lookup()
        if obj is not None and not hasattr(obj, "opt_state"):
            self._follow.problem = f"`{self.name}` is {a_kind(type(obj).__name__)}, not an nnx.Optimizer"
            obj = None
        self.problem = "" if obj is not None else self._follow.problem
        return obj


def watch_target(obj: Any, on_gone: Callable[[], None] | None = None) -> Target:
    """The :class:`Target` for what ``Watcher(obj)`` was given (a Target is taken as it is)."""
    if isinstance(obj, Target):
        return obj
    if split_pair(obj) is not None:
        return PairTarget(obj, on_gone)
    return ObjectTarget(obj, on_gone)
