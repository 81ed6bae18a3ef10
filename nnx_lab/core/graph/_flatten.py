"""jax's pytree flattening, made safe for any graph flax accepts (reference cycles included).

NNX graphs may hold reference cycles (``m.me = m``, a child that keeps its parent, two modules
that point at each other): flax's own walk visits each node once. jax's C++ flattening recurses
instead, and jaxlib brackets each level with ``Py_EnterRecursiveCall`` / ``Py_LeaveRecursiveCall``
without unwinding them when an exception passes through (jax 0.7 and 0.10 alike): a cycle's
RecursionError — or any exception raised in a Python callback it calls, a KeyboardInterrupt
included — leaves this thread's recursion depth counter permanently raised by the depth it had
reached. After a cycle that is the whole limit: every later call a few frames deep (a ``class
N(nnx.Module)`` statement) raises RecursionError for the rest of the session.

:func:`flatten` never lets that happen: its leaf predicate (given each node's path) makes a
container that closes a cycle a leaf, so jax never recurses into it, and :class:`CyclicGraph` is
raised once jax has returned; whatever the caller's predicate raises is caught and re-raised then
too, and a Ctrl-C arriving meanwhile is held until then. A shared, acyclic graph (tied weights) is
flattened exactly as jax flattens it. The cost: one Python call per node, as any ``is_leaf`` has.

>>> from flax import nnx
>>> class M(nnx.Module):
...     def __init__(self):
...         self.linear = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
>>> m = M()
>>> len(flatten(m)[0])
2
>>> m.linear.parent = m                  # a child holding its parent
>>> flatten(m)
Traceback (most recent call last):
...
nnx_lab.core.graph._flatten.CyclicGraph: M references itself (a reference cycle): jax's pytree flattening cannot walk it
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Callable, Iterable, Protocol

import jax
import numpy as np
from jax.core import Tracer


class TreeDef(Protocol):
    """jax's ``PyTreeDef`` as used here (jax's stubs leave it unresolved)."""

    @property
    def num_leaves(self) -> int: ...

    def unflatten(self, leaves: Iterable[Any], /) -> Any: ...  # the caller's tree, rebuilt


class SharedNode(ValueError):
    """A node reached twice (refused by ``flatten(..., shared=False)``)."""


class CyclicGraph(SharedNode):
    """The object holds a reference cycle: jax's pytree flattening cannot walk it (flax's walk can)."""


class TooDeep(ValueError):
    """Nested deeper than jax's recursion could go from here without a RecursionError (which would
    leak the same way): not walked by jax."""


# Types whose instances are never part of a cycle: jax's leaves, and tuples (immutable: a cycle
# through one passes through a mutable container, which is tracked).
_UNTRACKED = (
    tuple,
    jax.Array,
    np.ndarray,
    np.generic,
    jax.ShapeDtypeStruct,
    int,
    float,
    complex,
    str,
    bytes,
    type(None),
)
_tracked: dict[type, bool] = {}


def _track(t: type) -> bool:
    """Whether instances of ``t`` may be part of a cycle (remembered per type)."""
    got = _tracked[t] = not issubclass(t, _UNTRACKED) and not issubclass(t, Tracer)
    return got


@contextlib.contextmanager
def sigint_deferred():
    """Hold a Ctrl-C arriving inside the block until it is finished, then raise it (main thread only:
    other threads receive no signal)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    except (ValueError, TypeError):  # no signal support here (an embedded interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
        if received:
            raise KeyboardInterrupt


def _max_depth() -> int:
    """How deep jax may recurse from here: a quarter of the frames left (each level takes one or two
    of the interpreter's recursion budget, and the predicate's own calls need some)."""
    frames, frame = 0, sys._getframe()
    while frame is not None:
        frames, frame = frames + 1, frame.f_back
    return max(0, (sys.getrecursionlimit() - frames) // 4)


def flatten(
    tree: Any,
    is_leaf: Callable[..., bool] | None = None,
    *,
    with_path: bool = False,
    shared: bool = True,
    leaf_takes_path: bool = False,
    visits: list[int] | None = None,
) -> tuple[list, TreeDef]:
    """``jax.tree_util.tree_flatten(tree, is_leaf)`` (``tree_flatten_with_path`` with ``with_path``):
    the same leaves and treedef, or :class:`CyclicGraph` where ``tree`` holds a reference cycle
    (:class:`TooDeep` where it is nested too deep for jax's recursion from here).
    ``shared=False``: :class:`SharedNode` for any container reached twice (for a caller that refuses
    a shared node anyway). ``visits``: filled with the id of each container that may be part of a
    cycle, once per time jax enters it, in order: what :func:`flatten_known` allows later (the
    sequence also says which positions share a node). ``leaf_takes_path``: ``is_leaf(key_path, x)``,
    as jax's ``is_leaf_takes_path``.
    Whatever ``is_leaf`` raises is raised after jax's walk has returned.

    A container met again is a cycle when its last visit is still open, i.e. when the path of that
    visit is a prefix of the current one (jax visits nodes depth-first): then it is a leaf here, so
    jax never recurses into it, and the cycle is raised afterwards. A container met again elsewhere
    (tied weights) is walked again, as jax walks it. Only the last visit needs checking: a later
    visit of a node inside an open one would have been a cycle, found then.
    """
    raised: list[BaseException] = []
    last: dict[int, tuple] = {}  # id -> path of its last visit
    keep: list = []  # the containers visited, alive until the end: no id is reused meanwhile
    found: list[tuple[type, str]] = []  # what stopped the walk: a cycle, a shared node, the depth
    tracked = _tracked
    depth = _max_depth()

    def guarded(path: tuple, x: object) -> bool:
        if raised or found:
            return True  # finish at once: every remaining node a leaf
        try:
            if is_leaf is not None and (is_leaf(path, x) if leaf_takes_path else is_leaf(x)):
                return True
            if len(path) > depth:
                found.append((TooDeep, f"{type(tree).__name__} is nested more than {depth} levels deep"))
                return True
            t = type(x)
            if not (tracked.get(t) or (t not in tracked and _track(t))):
                return False
            before = last.get(id(x))
            if before is None:
                keep.append(x)
            elif not shared:
                found.append((SharedNode, f"a node of {type(tree).__name__} is reached by two paths"))
                return True
            elif path[: len(before)] == before:
                found.append(
                    (
                        CyclicGraph,
                        f"{type(tree).__name__} references itself (a reference cycle): "
                        "jax's pytree flattening cannot walk it",
                    )
                )
                return True
            last[id(x)] = path
            if visits is not None:
                visits.append(id(x))
            return False
        except BaseException as e:  # noqa: BLE001 - raised below, after jax's C++ walk has returned
            raised.append(e)
            return True

    with sigint_deferred():
        flat, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=guarded, is_leaf_takes_path=True)
    if raised:
        raise raised[0]
    if found:
        raise found[0][0](found[0][1])
    return (flat if with_path else [leaf for _, leaf in flat]), treedef


def flatten_known(tree: Any, visits: list[int]) -> tuple[list, TreeDef] | None:
    """``jax.tree_util.tree_flatten(tree)`` where ``tree`` is expected to be the structure a
    :func:`flatten` walked (its ``visits``): None as soon as jax enters a container other than the one
    it entered at that point then (a changed structure, maybe now cyclic, deeper, or tied differently:
    the caller walks it with :func:`flatten`). Following the remembered walk step by step, it can
    neither recurse forever nor go deeper than that walk did, so it needs no paths: about half the cost
    of :func:`flatten` on a deep model (flax builds no key path per attribute). Objects alive together
    have distinct ids, so the same sequence is the same sharing: the same nodes reached twice."""
    tracked = _tracked
    n = len(visits)
    at = [0]  # the next visit expected
    stopped: list[None] = []

    def bounded(x: object) -> bool:
        if stopped:
            return True
        t = type(x)
        if not (tracked.get(t) or (t not in tracked and _track(t))):
            return False
        i = at[0]
        if i >= n or visits[i] != id(x):
            stopped.append(None)
            return True
        at[0] = i + 1
        return False

    with sigint_deferred():
        try:
            flat, treedef = jax.tree_util.tree_flatten(tree, is_leaf=bounded)
        except Exception:  # noqa: BLE001 - a user's pytree node raised: not the known structure
            return None
    return None if stopped or at[0] != n else (flat, treedef)
