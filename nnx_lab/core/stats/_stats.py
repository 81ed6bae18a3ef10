"""On-device statistics launched without waiting and fetched in one ``jax.device_get``: per-array kernels
(:mod:`._dispatch`, :mod:`._grouped`) or a structure's program (:mod:`._programs`), sharded arrays by
their shards (:mod:`._shards`).

>>> import jax.numpy as jnp
>>> [s] = compute_stats([jnp.array([1.0, 3.0, jnp.nan, 0.0])])
>>> s["mean"], s["max"], s["nan_count"], s["zero_frac"]
(1.333..., 3.0, 1, 0.25)
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

import jax
import numpy as np

from ._batch import Batch
from ._dispatch import dispatch, threads_see_jax_config
from ._executables import executables_count, grouped_count
from ._grouped import compiling_grouped, dispatch_grouped, look_done
from ._kernels import KERNELS, STAT_NAMES, is_numeric_dtype
from ._layered import layered_cache_size
from ._plan import LaunchPlan
from ._programs import COMPILING, Program, program_for, programs_compiled
from ._programs import compiling as compiling_programs
from ._stacked import stacked_cache_size
from ._table import KERNEL_ERRORS, StatsError, StatsTable
from ._transfer import copy_to_host as _copy_to_host
from ._transfer import fetch as _fetch
from ._transfer import is_ready

if TYPE_CHECKING:
    from ._types import Value

_log = logging.getLogger("nnx_lab")

__all__ = [
    "STAT_NAMES",
    "LaunchPlan",
    "PendingStats",
    "StatsTable",
    "threads_see_jax_config",
    "StatsError",
    "compiling",
    "compute_stats",
    "is_numeric_dtype",
    "is_ready",
    "kernel_cache_size",
]


def kernel_cache_size() -> int:
    """Executables compiled so far for statistics: one per distinct spec and kernel, plus one
    program per model structure refreshed repeatedly (see :mod:`._programs`)."""
    return (
        sum(k._cache_size() for k in KERNELS)  # pyright: ignore[reportAttributeAccessIssue] - jax.jit's wrapper has no public count of its executables
        + executables_count()
        + grouped_count()
        + programs_compiled()
        + layered_cache_size()
        + stacked_cache_size()
    )


def compiling() -> bool:
    """Whether some statistics program or grouped kernel is being compiled (or waits its turn) now."""
    return compiling_programs() or compiling_grouped()


class Deferred(Exception):
    """Raised by :class:`PendingStats` with ``defer=True`` while the program for these arrays is
    being compiled: per-array kernels would each wait for a place in a full device queue, so a
    viewer skips this refresh and tries again later."""


def compute_stats(arrays: Sequence[Any]) -> list[dict | StatsError | None]:
    """Statistics of each array, computed on its device, fetched in one transfer (two when some
    array holds NaN or Inf: those get the masked kernel). Waits for the device.

    ``arrays`` holds live numeric arrays (``jax.Array``, numpy arrays or Python
    numbers). Returns, per array, a dict of the statistics for its dtype, ``None``
    for an empty array, or a :class:`StatsError` when that array could not be
    reduced (deleted while we looked, for instance). Never raises for one array.
    """
    return PendingStats(arrays).result()


class PendingStats:
    """Statistics dispatched to the devices, their small results on their way to the host.

    Creating one queues the kernels behind whatever the devices are doing (a training loop's
    steps) and starts the copies of their results to the host; it never waits. :meth:`ready`
    says, without waiting, whether the numbers have arrived (an array with NaN or Inf then gets
    its masked kernel, dispatched the same way); :meth:`table` and :meth:`result` wait for them.

    The arrays are held by weak reference: a refresh in flight never keeps an old step's
    parameters alive (the device keeps what its queued kernels read until they have run).
    """

    def __init__(
        self,
        arrays: Sequence[Any],
        *,
        repeated: bool = False,
        defer: bool = False,
        plan: LaunchPlan | None = None,
        layers: dict | None = None,
        refs: list | None = None,
    ):
        # refs: per array, a function giving it again later (or None), instead of a weak reference to it
        # (a shard's part, made anew from a weak reference to its array: ._shards.ShardParts.refs)
        self.plan = plan if plan is not None else LaunchPlan(arrays, layers)
        self._table = StatsTable(len(arrays), self.plan)
        self._lock = threading.Lock()  # _advance takes the results off _todo: one thread at a time
        # Arrays on several devices: their single-device parts' statistics, combined when read (._shards).
        self._parts = (
            PendingStats(
                self.plan.shards.expand(arrays),
                repeated=repeated,
                defer=defer,
                plan=self.plan.parts,
                refs=self.plan.shards.refs(arrays),
            )
            if self.plan.shards is not None
            else None
        )
        self._combined = False
        if self._parts is not None:
            return
        index = self.plan.index
        if self.plan.all_device:
            xs = [arrays[i] for i in index] if len(index) != len(arrays) else list(arrays)
        else:
            xs = [arrays[i] if isinstance(arrays[i], jax.Array) else np.asarray(arrays[i]) for i in index]
        self._todo = _launch(self.plan, xs, repeated, defer)
        # The arrays that may need the masked kernel (NaN or Inf), by call position: weak references.
        if refs is not None:
            self._refs = [refs[i] for i in index]
        else:
            self._refs = list(map(weakref.ref, xs)) if self.plan.all_device else [_ref(x) for x in xs]
        self._waiting = [batch.outputs for batch in self._todo if not isinstance(batch.outputs, StatsError)]
        _copy_to_host(self._waiting)

    def ready(self) -> bool:
        """Whether :meth:`result` would return at once (never waits; may dispatch masked kernels)."""
        if self._parts is not None:
            return self._parts.ready()
        for r in reversed(self._waiting):  # the last dispatched is usually the last to finish: O(1) per tick
            if not is_ready(r):
                return False
        with self._lock:  # a thread waiting to publish asks too: one of them fetches, the other waits
            if self._todo:
                self._advance()
            done = not self._todo
        if done:
            look_done()
        return done

    def wait(self) -> None:
        """Block until every dispatched result (masked ones included) is on the host's side."""
        if self._parts is not None:
            return self._parts.wait()
        while not self.ready():
            for r in self._waiting:
                try:
                    jax.block_until_ready(jax.tree.leaves(r))
                except RuntimeError:  # deleted or failed: fetching says what went wrong, per array
                    pass

    def table(self) -> StatsTable:
        """Every array's statistics as columns (waits for the devices)."""
        if self._parts is not None:
            parts = self._parts.table()
            shards, parts_plan = self.plan.shards, self.plan.parts
            assert shards is not None and parts_plan is not None  # (a plan with parts has both)
            with self._lock:
                if not self._combined:
                    shards.combine(parts, self._table, parts_plan.sizes)
                    self._combined = True
            return self._table
        with self._lock:
            while self._todo:
                self._advance()
        look_done()
        return self._table

    def result(self) -> list[dict | StatsError | None]:
        """Per array: its statistics, None (empty) or a StatsError. Waits for the devices."""
        return self.table().dicts()

    def _advance(self) -> None:
        todo, self._todo = self._todo, []
        table, plan = self._table, self.plan
        fetched = _fetch([batch.outputs for batch in todo])
        single: list[int] = []  # calls whose rows give the next one-pass guesses, learned at once
        for batch, got in zip(todo, fetched):
            if isinstance(got, StatsError):
                table.errors.update(dict.fromkeys(batch.rows(plan).tolist(), got))
            else:
                table.put(batch.rows(plan), *batch.columns(got, plan))
                single += [m for m in batch.members if plan.counts[m] == 1]
        if single:  # (one call: per batch, a first refresh's 10,000 per-array kernels took 30 ms per 1,000)
            plan.hints.learn(single, [plan.index[m] for m in single], table)
        if not self._refs:
            return
        # A non-finite mean, std, min or max: the array holds NaN or Inf. (The sums always carry a
        # NaN; a sharded min/max may drop it when combining shards.) Describe its finite values
        # and count the others with the masked kernel; a one-pass result that failed its check
        # (._one_pass) is recomputed by the exact kernel.
        redo = {m for batch in todo for m in batch.redo}
        again: dict = {}
        hits = [
            (batch, k)
            for batch, got in zip(todo, fetched)
            if not isinstance(got, StatsError)
            for k in table.nonfinite(batch.rows(plan))
        ]
        for batch, k in hits:
            m = batch.owner(plan, k)
            masked, i = plan.calls[m][1 if m in redo else 2], plan.index[m]
            if masked is None or i in table.errors or m in again:
                continue
            x = self._refs[m]()
            if x is None:
                error = StatsError(
                    "the array was replaced before its statistics were computed"
                    if m in redo
                    else "holds NaN or Inf; the array was replaced before they were counted"
                )
                table.errors.update(dict.fromkeys(plan.rows([m]), error))
            else:
                again[m] = (masked, x)
        self._refs = []
        if again:
            results = dispatch(list(again.values()))
            self._todo = [Batch(r, [m]) for m, r in zip(again, results)]
            self._waiting = [batch.outputs for batch in self._todo if not isinstance(batch.outputs, StatsError)]
            _copy_to_host(self._waiting)


def _ref(x: Value) -> Callable[[], Value | None]:  # a weak reference to a device array (a strong one to a host value)
    try:
        return weakref.ref(x) if isinstance(x, jax.Array) else (lambda: x)
    except TypeError:
        return lambda: x


def _launch(plan: LaunchPlan, xs: list[Value], repeated: bool, defer: bool) -> list[Batch]:
    """Launch each array's kernel: the chunks whose compiled program is ready as one launch each (one
    place in the device's queue), the rest one kernel call each (:mod:`._dispatch`). ``repeated``: the caller will
    refresh the same arrays again (a viewer), so a program is worth compiling at once rather than
    the second time the structure is seen. ``defer``: raise :class:`Deferred` instead of launching
    per-array kernels while a program compiles."""
    kernels = [c[1] for c in plan.calls]
    programs: list[Program | str | None] = list(
        plan.programs
    )  # a chunk's program, once compiled, is kept by the plan: no key hashed again
    for c, (chunk, key) in enumerate(plan.chunks):
        if programs[c] is None:
            found = program_for(
                [kernels[m] for m in chunk],
                [xs[m] for m in chunk],  # pyright: ignore[reportArgumentType] - a chunk holds device arrays (_programs.device_groups)
                key=key,
                background=threads_see_jax_config(),
                eager=repeated,
            )
            programs[c] = found
            if isinstance(found, Program):
                plan.programs[c] = found
    if defer and COMPILING in programs:
        raise Deferred("the statistics program for this model is being compiled")
    batches: list[Batch] = []
    launched = np.zeros(len(xs), bool)
    for c, ((chunk, _), program) in enumerate(zip(plan.chunks, programs)):
        if not isinstance(program, Program):
            continue
        if not repeated and len(program.one_pass):
            continue  # a one-off snapshot: exact kernels (the one pass's guesses pay off over a viewer's refreshes)
        calls = np.asarray(chunk)[program.one_pass]
        shifts, exps, known = plan.hints.chunks[c].take(program.one_pass)
        try:
            outputs = program.launch([xs[m] for m in chunk], shifts, exps)
        except KERNEL_ERRORS:  # a buffer deleted or donated: the per-array kernels say which
            _log.debug("nnx_lab: a statistics program launch failed; per-array kernels instead", exc_info=True)
            continue
        batches.append(Batch(outputs, chunk, program, c, (calls, shifts, known) if len(calls) else None))
        launched[chunk] = True
    rest = np.flatnonzero(~launched).tolist()
    for r, members in dispatch_grouped([(kernels[m], xs[m]) for m in rest]):
        batches.append(Batch(r, [rest[j] for j in members]))
    return batches
