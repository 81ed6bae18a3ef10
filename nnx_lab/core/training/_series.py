"""Series beside a model's rows: gradients and optimizer state, matched to its Variables by path.

A refresh may carry, beside each Variable's own statistics, those of arrays that belong to that
Variable elsewhere: its gradient (``viewer.tick(grads=grads)`` or ``viewer.log(grads=grads)``) and
its optimizer state (Adam's ``mu`` and ``nu``, momentum's ``trace``...: ``watch(model,
optimizer=opt)``). Each is a *series*: a tree whose array leaves are matched to rows by path. A
leaf's path matches the row whose path is its longest suffix (``opt_state[0].mu.layers[0].kernel``
is ``layers[0].kernel``'s ``mu``) when their shapes agree; the keys before that suffix name the
series (the last named key: ``mu``; the whole prefix where two prefixes share that name). Leaves
that match no row (a step ``count``, a schedule's state, a shape that differs) are listed with
their statistics, never dropped: the first :data:`MAX_UNMATCHED` of each tree, the others counted
(a tree of 100,000 leaves that match nothing costs what 200 do, not a minute of reductions).

Costs. ``log``/``tick(grads=...)`` keeps a reference to the tree (no copy, no flattening, no
sync) until that step's tick: when it dispatches a refresh, the tree's arrays are reduced with the
parameters, by the same kernels in the same one program, fetched in the same one transfer; when
the throttle skips it, the reference is dropped. So a gradient is never held past its step. A
refresh without gradients (a tick that passed none, the end of a loop or cell) keeps the last
gradient statistics, marked *stale* with the step they are from. The optimizer is held by weak
reference and its state read at every refresh (its arrays are the ones of that moment); its step
count travels as one more array (no sync).

Matching leaves to rows: :mod:`._series_match`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from flax import nnx

from .._text import one_line
from ..compat import get_value
from ..live._target import OptimizerSource
from ..stats._kernels import STAT_NAMES
from ._series_match import Entry, Layout, array_problem, flat_leaves, leaf_paths
from ._updates import UpdateTracker

__all__ = ["GRAD", "UPDATE", "SeriesColumns", "SeriesStore", "is_optimizer", "leaf_paths"]

GRAD = "grad"
UPDATE = "update"
_NORM = STAT_NAMES.index("norm")
_MAX = STAT_NAMES.index("max")
#: unmatched leaves of one tree reduced and listed; the others are counted (``unmatched_more``)
MAX_UNMATCHED = 200


@dataclasses.dataclass
class SeriesColumns:
    """What one refresh knows of its series, as host numbers (no array).

    ``matrices[name]``: ``float64[rows, STAT_NAMES]`` (NaN: that row has none); ``steps[name]``:
    the step (tick count) its arrays are from; ``stale``: names carried over from an earlier
    refresh; ``unmatched``: ``(series, path text, what, statistics or None)`` per leaf matched to
    no row; ``problems``: one line each (bad input); ``opt_step``: the optimizer's step count."""

    names: tuple[str, ...] = ()
    matrices: dict = dataclasses.field(default_factory=dict)
    steps: dict = dataclasses.field(default_factory=dict)
    stale: frozenset = frozenset()
    unmatched: list = dataclasses.field(default_factory=list)
    problems: list = dataclasses.field(default_factory=list)
    opt_step: int | None = None
    ratios: dict = dataclasses.field(default_factory=dict)  # name -> ratio per row, where known exactly
    waiting: bool = False  # some series left out while their program compiles: the last ones are kept
    unmatched_more: int = 0  # unmatched leaves beyond those listed: counted, not reduced

    def ratio(self, name: str, param_norm: np.ndarray) -> np.ndarray:
        """``‖series‖ / ‖θ‖`` per row (NaN where either is missing or ‖θ‖ is 0); the automatic
        update's is ``‖θₜ − θₜ₋₁‖ / ‖θₜ₋₁‖``, exactly."""
        if name in self.ratios:
            return self.ratios[name]
        with np.errstate(invalid="ignore", divide="ignore"):
            r = self.matrices[name][:, _NORM] / param_norm
        r[~np.isfinite(r)] = np.nan
        return r

    def stats_dict(self, name: str, row: int) -> dict:
        """Row ``row``'s statistics of series ``name`` (None where missing)."""
        values = self.matrices[name][row].tolist()
        return {s: (None if v != v else v) for s, v in zip(STAT_NAMES, values)}


class _Dispatch:
    """One refresh's series: :meth:`prepare` gives the arrays to reduce with the parameters,
    :meth:`finish` turns their statistics into :class:`SeriesColumns`. Made by :class:`SeriesStore`."""

    def __init__(
        self,
        store: SeriesStore,
        grads: Any,
        grads_step: int | None,
        optimizer: Any,
        step: int,
        state: bool = True,
        updates: Any = None,
        hold: bool = False,
    ):
        self._store, self._grads, self._grads_step, self._state = store, grads, grads_step, state
        self._updates, self._hold = updates, hold
        self._optimizer, self._step = optimizer, step
        self._entries: list[Entry] = []
        self._problems: list[str] = []
        self._step_at: int | None = None  # position of the optimizer's step count among the arrays
        self._unmatched_more = 0
        self.waiting = False  # some inputs left out of this refresh (their program compiles): prepare(without=)
        self.logged = False  # whether prepare() gave logged gradients/updates to reduce
        # position among the arrays of a stacked leaf's first layer -> (layer axis, layers): see _stats.LaunchPlan
        self.groups: dict[int, tuple[int, int]] = {}

    def fallbacks(self) -> list[tuple[str, ...]]:
        """What to leave out, in turn, when the program for :meth:`prepare`'s layout is still compiling:
        the logged trees (the optimizer's state keeps its layout from refresh to refresh), then every series."""
        out = []
        if self._grads is not None or self._updates is not None:
            out.append(("grads", "updates"))
        if self._optimizer is not None:
            out.append(("grads", "updates", "optimizer state"))
        return out

    def release(self) -> None:
        """The arrays went to the kernels: nothing of the step is held past its launch."""
        self._grads = self._optimizer = self._updates = None

    def prepare(self, described: Any, without: tuple[str, ...] = ()) -> tuple[list, Any]:
        """The arrays to reduce after the parameters and their layout key (None: none). ``without``:
        the inputs left out of this refresh (their program is compiling: :meth:`fallbacks`)."""
        self._entries, self._problems, self.groups, self._step_at = [], [], {}, None
        self._unmatched_more = 0
        self.waiting = bool(without)
        memo = described.memo
        if "series_index" not in memo:
            index: dict = {}
            for i, row in enumerate(described.rows):
                for p in (row.path, *row.aliases):
                    index.setdefault(p, i)
            memo["series_index"] = index
            memo["series_shapes"] = [row.shape for row in described.rows]
            children: dict[int, list[int]] = {}  # a stacked Variable's row -> its layers' rows
            for j, row in enumerate(described.rows):
                if getattr(row, "layer_of", None) is not None:
                    children.setdefault(row.layer_of, []).append(j)
            memo["series_layers"] = {i: (described.rows[i].layer_axis, kids) for i, kids in children.items()}
        index, shapes, stacked = memo["series_index"], memo["series_shapes"], memo["series_layers"]
        arrays: list = []
        trees = []
        if self._hold:  # a tick's refresh: its parameters are compared with the next tick's
            self._store.updates.hold(described, self._step)
            self._hold = False
        if self._grads is not None:
            trees.append(("grads", self._grads, GRAD))
        if self._updates is not None:
            trees.append(("updates", self._updates, UPDATE))
        if self._optimizer is not None and self._state:
            trees.append(("optimizer state", getattr(self._optimizer, "opt_state", None), None))
        for what, _, _ in trees:
            if what in without:
                self._problems.append(
                    f"{what}: not in this refresh while the statistics program that adds "
                    "them compiles (the last ones are shown)"
                )
        trees = [t for t in trees if t[0] not in without]
        self.logged = any(what in ("grads", "updates") for what, _, _ in trees)
        for what, tree, fixed in trees:
            try:
                leaves, treedef = flat_leaves(tree)  # hijax Variables' arrays too
                key = (what, treedef, id(memo))
                layout = self._store.layouts.get(key)
                if layout is None:
                    layout = self._store.layouts[key] = Layout(tree, index, shapes, fixed, what)
                    if len(self._store.layouts) > 8:
                        self._store.layouts.pop(next(iter(self._store.layouts)))
            except Exception as e:  # noqa: BLE001 - a tree jax cannot flatten: say so, go on
                self._problems.append(f"{what}: {one_line(e)}")
                continue
            bad: dict[str, list[str]] = {}
            matched = unmatched = 0
            reshaped: list[Entry] = []  # a Variable's path with another shape (a transposed gradient)
            integers: list[str] = []  # a gradient or update of integers: no norm, no ratio
            for entry, leaf in zip(layout.entries, leaves):
                if entry.row < 0:
                    unmatched += 1
                    if entry.what.startswith("shape "):
                        reshaped.append(entry)
                    if unmatched > MAX_UNMATCHED:  # listed leaves are bounded: count the rest, reduce none
                        self._unmatched_more += 1
                        continue
                problem = array_problem(leaf)
                if problem is not None:
                    bad.setdefault(problem, []).append(entry.text)
                    continue
                if fixed is not None and entry.row >= 0 and _is_integer(leaf):
                    integers.append(f"{entry.text} ({leaf.dtype})")
                self._entries.append(entry)
                arrays.append(leaf)
                matched += entry.row >= 0
                if entry.row in stacked:  # a stacked Variable's gradient/state: per layer too, in the same call
                    axis, kids = stacked[entry.row]
                    self.groups[len(arrays)] = (axis, len(kids))
                    for layer, j in enumerate(kids):
                        self._entries.append(Entry(entry.series, j, f"{entry.text}[layer {layer}]"))
                        arrays.append(leaf)
            for problem, texts in bad.items():
                more = f" and {len(texts) - 3} more" if len(texts) > 3 else ""
                self._problems.append(
                    f"{what}: {len(texts)} lea{'f' if len(texts) == 1 else 'ves'} "
                    f"{problem}: {', '.join(texts[:3])}{more}"
                )
            if reshaped:
                self._problems.append(
                    f"{what}: {_leaves(len(reshaped))} at a Variable's path with another shape, "
                    f"listed as unmatched: {reshaped[0].text}: {reshaped[0].what}"
                )
            if integers:
                self._problems.append(
                    f"{what}: {_leaves(len(integers))} of integers, so no norm nor ratio "
                    f"(a gradient is a float array): {', '.join(integers[:3])}"
                    f"{f' and {len(integers) - 3} more' if len(integers) > 3 else ''}"
                )
            if leaves and not matched and not bad and not reshaped:
                self._problems.append(
                    f"{what}: no leaf matches a Variable of the model by path and shape (e.g. {layout.entries[0].text})"
                )
        for what, _, _ in trees:  # what each input said last, kept until that input comes again
            self._store.problems[what] = [p for p in self._problems if p.startswith(f"{what}: ")]
        with_step = self._optimizer is not None and "optimizer state" not in without
        step = getattr(self._optimizer, "step", None) if with_step else None
        if isinstance(step, nnx.Variable):
            step = get_value(step)
        if isinstance(step, jax.Array) and array_problem(step) is None:
            self._step_at = len(arrays)
            arrays.append(step)
        spec = tuple((type(a), a.shape, a.dtype, getattr(a, "sharding", None)) for a in arrays)
        if self.groups:
            spec += (("layers", tuple(sorted(self.groups.items()))),)
        return arrays, (spec or None)  # no array added: the structure's own plan

    def finish(self, table: Any, n_rows: int) -> SeriesColumns:
        """``table``: the statistics of :meth:`prepare`'s arrays (a StatsTable, or None for none)."""
        m = table.matrix() if table is not None else np.zeros((0, len(STAT_NAMES)))
        errors = table.errors if table is not None else {}
        names: list[str] = []
        matrices: dict = {}
        unmatched: list = []
        failed: list[str] = []
        for k, entry in enumerate(self._entries):
            if k in errors:
                failed.append(f"{entry.series} of {entry.text}: {errors[k]}")
            if entry.row < 0:
                stats = None if k in errors else {s: (None if v != v else v) for s, v in zip(STAT_NAMES, m[k].tolist())}
                unmatched.append((entry.series, entry.text, entry.what, stats))
                continue
            if entry.series not in matrices:
                names.append(entry.series)
                matrices[entry.series] = np.full((n_rows, len(STAT_NAMES)), np.nan)
            matrices[entry.series][entry.row] = m[k]
        problems = self._problems + ([f"{len(failed)} series arrays failed: {failed[0]}"] if failed else [])
        opt_step = None
        if self._step_at is not None and self._step_at not in errors:
            v = m[self._step_at, _MAX]
            opt_step = None if v != v else int(v)
        steps = {name: (self._grads_step if name in (GRAD, UPDATE) else self._step) for name in names}
        return SeriesColumns(
            tuple(names),
            matrices,
            steps,
            frozenset(),
            unmatched,
            problems,
            opt_step,
            waiting=self.waiting,
            unmatched_more=self._unmatched_more,
        )


class SeriesStore:
    """A Watcher's series: the gradients logged for the current step and the optimizer, and what
    the last published refresh knew (to keep gradient statistics, marked stale, over refreshes
    that had none)."""

    def __init__(self, optimizer: Any = None, *, state: bool = True, updates: bool = True):
        # state=False: the optimizer is the watched object itself (its state is already its rows):
        # only its step count is added.
        # optimizer: an object (held weakly) or a NameTarget followed at every refresh (a TypeError
        # here for an object that is no optimizer)
        self._optimizer = None if optimizer is None else OptimizerSource(optimizer)
        self._state = state
        self.updates = UpdateTracker(updates)  # ‖θₜ − θₜ₋₁‖ from a tick's refresh to the next tick
        self._given_updates: Any = None
        self._grads: Any = None
        self._grads_step: int | None = None
        self.layouts: dict = {}
        self.last: SeriesColumns | None = None
        # What the latest refresh given each input ("grads", "optimizer state") found wrong with it:
        # shown in the status even when that refresh was skipped (a program compiling), kept until
        # that input is given again.
        self.problems: dict[str, list[str]] = {}

    @property
    def optimizer(self) -> Any:
        if self._optimizer is None:
            return None
        obj = self._optimizer.resolve()
        if self._optimizer.name is not None:  # a followed name: what it holds now, said until it holds an optimizer
            self.problems["optimizer"] = [f"optimizer: {self._optimizer.problem}"] if obj is None else []
        return obj

    @property
    def optimizer_name(self) -> str | None:
        """The optimizer's name when it is followed (looked up at every refresh), else None."""
        return None if self._optimizer is None else self._optimizer.name

    def log(self, step: int, grads: Any = None, updates: Any = None) -> None:
        """Keep ``grads`` / ``updates`` (by reference: no copy, no sync) for this step's refresh."""
        if grads is not None:
            self._grads, self._grads_step = grads, step
        if updates is not None:
            self._given_updates, self._grads_step = updates, step

    def take(self, step: int, tick: bool = False) -> _Dispatch | None:
        """This refresh's series (None: nothing to add), taking what was logged. ``tick``: dispatched
        by a tick (its parameters are held for the update ratio); any other refresh (a loop's or
        cell's end) releases what is held."""
        grads, updates, optimizer = self._grads, self._given_updates, self.optimizer
        self._grads = self._given_updates = None
        hold = tick and self.updates.enabled
        if not tick:
            self.updates.release()
        if grads is None and updates is None and optimizer is None and self.last is None and not hold:
            return None
        return _Dispatch(self, grads, self._grads_step, optimizer, step, self._state, updates, hold)

    def published(self, columns: SeriesColumns | None, n_rows: int) -> SeriesColumns | None:
        """What a published snapshot shows: ``columns`` plus the last gradient statistics (stale)
        when this refresh had none and the rows are the same."""
        if columns is None:
            columns = SeriesColumns()
        arrived = self.updates.collect(n_rows)
        if arrived is not None and UPDATE not in columns.matrices:  # given updates come first
            norm, ratio, step = arrived
            m = np.full((n_rows, len(STAT_NAMES)), np.nan)
            m[:, _NORM] = norm
            columns = dataclasses.replace(
                columns,
                names=(*columns.names, UPDATE),
                matrices={**columns.matrices, UPDATE: m},
                steps={**columns.steps, UPDATE: step},
                ratios={**columns.ratios, UPDATE: ratio},
            )
        self.problems["update"] = [self.updates.problem] if self.updates.problem else []
        last = self.last
        if last is not None:  # a refresh without gradients (updates) keeps the last ones' unmatched leaves too
            given = (
                {entry[0] for entry in columns.unmatched}
                | {p.split(":", 1)[0] for p in columns.problems}
                | {source for source, name in (("grads", GRAD), ("updates", UPDATE)) if name in columns.names}
            )
            kept = [entry for entry in last.unmatched if entry[0] in ("grads", "updates") and entry[0] not in given]
            if kept:
                columns = dataclasses.replace(columns, unmatched=[*columns.unmatched, *kept])
        # kept from an earlier refresh, marked stale: the gradients and updates of a refresh that had none,
        # and every series a refresh left out while its program compiles
        carried = (*(last.names if last is not None and columns.waiting else ()), GRAD, UPDATE)
        if columns.waiting and columns.opt_step is None and last is not None:
            columns = dataclasses.replace(columns, opt_step=last.opt_step)
        for name in dict.fromkeys(carried):
            if (
                name not in columns.matrices
                and last is not None
                and name in last.matrices
                and last.matrices[name].shape[0] == n_rows
            ):
                columns = dataclasses.replace(
                    columns,
                    names=(*columns.names, name),
                    matrices={**columns.matrices, name: last.matrices[name]},
                    steps={**columns.steps, name: last.steps[name]},
                    stale=columns.stale | {name},
                    ratios={**columns.ratios, **({name: last.ratios[name]} if name in last.ratios else {})},
                )
        order = {GRAD: 0, UPDATE: 2}
        columns = dataclasses.replace(columns, names=tuple(sorted(columns.names, key=lambda n: order.get(n, 1))))
        self.last = (
            columns if columns.names or columns.unmatched or columns.problems or columns.opt_step is not None else None
        )
        return self.last


def _leaves(n: int) -> str:
    return f"{n:,} lea{'f' if n == 1 else 'ves'}"


def _is_integer(leaf: Any) -> bool:
    dtype = getattr(leaf, "dtype", None)
    try:
        return dtype is not None and np.dtype(dtype).kind in "biu"
    except TypeError:  # a dtype numpy does not know (a PRNG key): not an integer array
        return False


def is_optimizer(obj: Any) -> bool:
    """Whether ``obj`` is an ``nnx.Optimizer`` (what ``watch(model, optimizer=...)`` takes)."""
    return isinstance(obj, nnx.Optimizer)
