"""Taking snapshots: a model described (rows, structure), its statistics launched now and fetched later
(:class:`PendingSnapshot`), or at once (:func:`snapshot`); the snapshot itself is ``_data.Snapshot``.

>>> from flax import nnx
>>> import nnx_lab
>>> snap = nnx_lab.snapshot(nnx.Linear(3, 4, rngs=nnx.Rngs(0)))
>>> [(r.path, r.type, r.shape, r.status) for r in snap.rows]
[(('bias',), 'Param', (4,), 'ok'), (('kernel',), 'Param', (3, 4), 'ok')]
>>> snap.rows[0].stats["zero_frac"]
1.0
>>> snap.totals["Param"]
{'count': 2, 'size': 16, 'bytes': 64}
"""

from __future__ import annotations

import os
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from .._gc import paused_gc
from ..render import round_significant
from ..stats import Deferred, PendingStats
from ._data import PRECISION, Snapshot, totals
from ._describe import STATUSES, Row
from ._devices import device_summary, on_disk
from ._layers import expand as expand_layers
from ._layers import parse_layers
from ._structure import Described, StructureCache, describe, remembered

if TYPE_CHECKING:
    from ..checkpoint import Progress
    from ..stats import StatsTable

# Snapshot, PRECISION, Row and round_significant are this module's too: the live refresh takes them here.
__all__ = ["PRECISION", "STATUSES", "PendingSnapshot", "Row", "Snapshot", "Unchanged", "round_significant", "snapshot"]


def snapshot(
    obj: Any,
    *,
    stats: bool = True,
    layers: dict | None = None,
    progress: Callable[[Progress], None] | bool | None = None,
) -> Snapshot:
    """Describe every Variable of ``obj`` without copying any array to the host.

    Never raises for one odd Variable (its row gets a status instead). Waits for the
    device; :class:`PendingSnapshot` does not.

    Args:
      obj: an ``nnx.Module`` (any nesting), an ``nnx.State`` or the nested dict
        ``nnx.state``/``nnx.split`` produce, the ``(graphdef, state, ...)`` tuple of ``nnx.split``
        (rows named as in the model), a Linen module inside ``nnx.bridge.ToNNX``,
        an abstract model from ``nnx.eval_shape``, or a single Variable.
      stats: with ``False`` only descriptions are gathered (nothing runs on the device).
      layers: path prefix -> layer axis of stacked Variables (``{"blocks": 0}``): each gets one row
        per layer after its own (see :mod:`._layers`; flax's ``PARTITION_NAME`` metadata needs none).
      progress: for a checkpoint directory, called with a ``core.checkpoint.Progress`` after every
        block its statistics stream (``False``: nothing; default: a line in a notebook, see
        ``core.checkpoint.checkpoint_rows``).

    Raises:
      TypeError: ``obj`` is none of the above, ``layers`` is not a dict of prefix -> int, or
        ``progress`` is given for a model.
      ValueError: a declared prefix holds no Variable, or one of its Variables has no such axis.

    >>> from flax import nnx
    >>> snap = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> len(snap.rows), sorted(snap.rows[1].stats)[:3]
    (2, ['abs_max', 'inf_count', 'max'])
    >>> snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), stats=False).rows[0].stats is None
    True
    """
    if progress is not None and not isinstance(obj, (str, os.PathLike)):
        raise TypeError("progress= is for a checkpoint directory (its statistics stream from disk); a model has none")
    if isinstance(obj, (str, os.PathLike)):  # an Orbax checkpoint directory: rows from its metadata (core.checkpoint)
        from ..checkpoint import checkpoint_rows

        found = checkpoint_rows(obj, stats=stats, layers=layers, progress=progress)
        snap = Snapshot(
            "Checkpoint",
            [Row(**r) for r in found.rows],
            found.nodes,
            found.totals,
            on_disk(found.info),
            found.elapsed_s,
        )
        snap.checkpoint = found.info  # its directory and bytes on disk
        return snap
    structure = remembered(obj, layers)
    # A structure seen before (its launch plan kept): statistics as a viewer's refresh takes them, by
    # its one-launch programs with the one-pass guesses the last snapshot learned.
    seen = structure is not None and structure.plan is not None
    return PendingSnapshot(obj, stats=stats, layers=layers, structure=structure, repeated=seen).finish()


class Series(Protocol):
    """Arrays reduced with the parameters (``core.training``'s series dispatch): gradients, optimizer state."""

    groups: dict[int, tuple[int, int]]  # stacked arrays: position among them -> (axis, layers)
    logged: bool  # whether prepare() gave logged gradients/updates to reduce

    def prepare(self, described: Described, without: tuple[str, ...] = ()) -> tuple[list, tuple | None]:
        """The arrays to reduce after the parameters and their layout key (None: none)."""
        ...

    def fallbacks(self) -> list[tuple[str, ...]]:
        """What to leave out, in turn, while the program of a layout compiles."""
        ...

    def release(self) -> None: ...

    def finish(self, table: StatsTable | None, n_rows: int) -> Any:
        """The snapshot's ``series``, from the statistics of :meth:`prepare`'s arrays (a SeriesColumns:
        core.training, a layer above, whose type this layer cannot name)."""
        ...


class Unchanged(Exception):
    """Raised by :class:`PendingSnapshot` given ``unless_same``: the model holds the very arrays (and
    structure) of that earlier refresh, so its statistics would be the same: nothing is launched."""


def _same_arrays(refs: Sequence[Callable[[], object] | None] | None, arrays: Sequence[object]) -> bool:
    return (
        refs is not None and len(refs) == len(arrays) and all(r is not None and r() is a for r, a in zip(refs, arrays))
    )


def _refs(arrays: Sequence[object]) -> list[weakref.ref | None]:
    out = []
    for a in arrays:
        try:
            out.append(weakref.ref(a))
        except TypeError:  # not weakly referable (a Python number): never "the same"
            out.append(None)
    return out


def _computed(arrays: Sequence[Any], sample: int = 8) -> bool:
    """Whether the arrays are computed (a few of them asked, first and last: a step's outputs
    arrive together)."""
    picks = arrays if len(arrays) <= sample else [*arrays[: sample // 2], *arrays[-(sample // 2) :]]
    try:
        return all(not hasattr(a, "is_ready") or (not a.is_deleted() and a.is_ready()) for a in picks)
    except (RuntimeError, AttributeError, TypeError):  # an array deleted meanwhile, or odd: not a measurement
        return False


class PendingSnapshot:
    """A snapshot whose statistics are still on their way from the devices.

    Creating one describes the Variables and dispatches the statistics kernels, which queue
    behind the device's work in order; nothing waits. :meth:`ready` says without waiting whether
    :meth:`finish` would return at once. ``host_s`` adds up the host's CPU time spent on it (the
    thread's CPU clock): never the time the device spends on earlier work, nor the time a dispatch
    waits for a slot in a full device queue.

    >>> from flax import nnx
    >>> pending = PendingSnapshot(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
    >>> pending.wait(); pending.ready()
    True
    >>> pending.finish().rows[1].stats["norm"] > 0
    True
    """

    @paused_gc()
    def __init__(
        self,
        obj: Any,
        *,
        stats: bool = True,
        repeated: bool = False,
        defer: bool = False,
        structure: StructureCache | None = None,
        series: Series | None = None,
        layers: object = None,
        unless_same: Sequence[Callable[[], object] | None] | None = None,
    ):
        # unless_same: ``array_refs`` of an earlier refresh: raise Unchanged when nothing differs from it.
        # series: arrays reduced with the parameters (a snapshot._series dispatch: prepare(described)
        # -> (arrays, layout key), finish(their StatsTable, rows) -> the snapshot's ``series``)
        start = time.thread_time()
        spec = layers if isinstance(layers, tuple) else parse_layers(layers)
        described = structure.describe(obj, stats=stats) if structure is not None else describe(obj, stats=stats)
        described = expand_layers(described, spec)
        self._rows, self._live = described.rows, described.live
        self._nodes, self._root_type, self._devices = described.nodes, described.root_type, described.devices
        self.reused = described.reused  # the structure of an earlier refresh, not walked again
        self._structure = described.structure
        if self._structure.totals is None:
            self._structure.totals = totals(self._rows)
        self._totals = self._structure.totals
        self._stats, self._series = None, series
        known = False
        extra, layout = series.prepare(described) if series is not None and stats else ([], None)
        try:
            if described.reused and unless_same is not None and _same_arrays(unless_same, described.arrays + extra):
                raise Unchanged
            try:
                known = _plan_known(described, structure, layout)
                self._stats = self._launch(described, extra, layout, series, structure, repeated, defer)
            except Deferred:
                # The program of this layout (new series: the loop's first gradients) is compiling: the
                # refresh goes on with what an existing program reduces, the parameters and the series
                # whose layout is unchanged; the rest follow once it is ready.
                fallbacks = series.fallbacks() if series is not None and extra else []
                if series is None or not fallbacks:
                    raise
                for k, without in enumerate(fallbacks):
                    extra, layout = series.prepare(described, without)
                    try:
                        known = _plan_known(described, structure, layout)
                        self._stats = self._launch(described, extra, layout, series, structure, repeated, defer)
                        break
                    except Deferred:
                        if k == len(fallbacks) - 1:
                            raise
        finally:
            if series is not None:
                series.release()
        # Weak references to what this refresh reduces (what a compiling program left out is not
        # among them): a later refresh of the very same arrays is skipped, so a cell that did not
        # touch the model costs a flatten and nothing on the device.
        self.array_refs = _refs(described.arrays + extra)
        self.nbytes = _live_nbytes(described) + sum(getattr(a, "nbytes", 0) for a in extra)  # what its reductions read
        # Whether it reduces logged gradients/updates (a refresh dropped unpublished keeps them, see Watcher).
        self.logged = bool(series is not None and stats and getattr(series, "logged", False))
        # The first refresh of a structure and layout learns its launch plan (one-pass hints, per-array
        # kernels while its program compiles): a one-off cost, like a compile, that says nothing of the next.
        self.first_of_layout = self._stats is not None and not known
        # Launched with its inputs already computed (nothing queued before it): the time until its
        # results arrive is the device's time for it (Watcher budgets it like the host's).
        self.launched_at = time.perf_counter()
        self.inputs_ready = self._stats is not None and _computed(described.arrays + extra)
        del described, extra  # the arrays: held only by the model and, until they have run, by the queued kernels
        self.host_s = time.thread_time() - start

    @staticmethod
    def _launch(
        described: Described,
        extra: list,
        layout: tuple | None,
        series: Series | None,
        structure: StructureCache | None,
        repeated: bool,
        defer: bool,
    ) -> PendingStats | None:
        arrays = described.arrays + extra if extra else described.arrays
        if not arrays:
            return None
        plan = structure.plan_for(layout) if described.reused else None  # pyright: ignore[reportOptionalMemberAccess] - reused: from a StructureCache
        layers = described.layers
        if extra and getattr(series, "groups", None):  # stacked gradients/state: per layer too
            layers = {**layers, **{len(described.arrays) + k: g for k, g in series.groups.items()}}  # pyright: ignore[reportOptionalMemberAccess] - extra: from a series
        stats = PendingStats(arrays, repeated=repeated, defer=defer, plan=plan, layers=layers)
        if structure is not None:
            structure.set_plan(layout, stats.plan)
        return stats

    def ready(self) -> bool:
        return self._stats is None or self._stats.ready()

    def device_time(self) -> float | None:
        """Seconds from its launch until now, where its inputs were computed at launch (call it when
        its results have just arrived: the device's time for it); None otherwise."""
        return time.perf_counter() - self.launched_at if self.inputs_ready else None

    def wait(self) -> None:
        """Block until the statistics have arrived (the time is the device's, not counted)."""
        if self._stats is not None:
            self._stats.wait()

    @paused_gc()
    def finish(self) -> Snapshot:
        """The snapshot, statistics included (waits for the devices if they are not there yet)."""
        self.wait()
        start = time.thread_time()
        table = self._stats.table() if self._stats is not None else None
        series = None
        if table is not None and len(self._live) < table.n:
            table, series = table.split(len(self._live))
        if not self._live:
            table = None
        snap = Snapshot(
            self._root_type,
            self._rows,
            self._nodes,
            self._totals,
            device_summary(self._devices),
            self.host_s,
            stats=table,
            live=self._live if table is not None else (),
            structure=self._structure,
        )
        if self._series is not None:
            snap.series = self._series.finish(series, len(self._rows))
        self.host_s += time.thread_time() - start
        snap.elapsed_s = self.host_s
        return snap


def _plan_known(described: Described, structure: StructureCache | None, layout: tuple | None) -> bool:
    """Whether an earlier refresh of this structure launched this layout (its plan is kept)."""
    return bool(described.reused and structure is not None and structure.plan_for(layout) is not None)


def _live_nbytes(described: Described) -> int:
    """The bytes of ``described``'s arrays: counted once per structure (a reused one has the same
    shapes and dtypes: 10,000 ``nbytes`` reads were 0.4 us per Variable of every warm refresh)."""
    structure = described.structure
    full = bool(described.arrays) and len(described.arrays) == len(described.live)
    if described.reused and full and structure.live_nbytes is not None:
        return structure.live_nbytes
    total = sum(getattr(a, "nbytes", 0) for a in described.arrays)
    if full:
        structure.live_nbytes = total
    return total
