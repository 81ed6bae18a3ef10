"""One refresh's series, from the arrays logged or read to their statistics: :class:`SeriesDispatch`
(made by :meth:`~._series.SeriesStore.take`) gives the leaves to reduce with the parameters, matched to
the rows (``_series_match.py``), and turns their statistics into :class:`~._series_columns.SeriesColumns`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

import jax
import numpy as np
from flax import nnx

from ..compat import get_value
from ..stats import STAT_NAMES
from ..text import one_line
from ._series_columns import GRAD, MAX, MAX_UNMATCHED, UPDATE, SeriesColumns
from ._series_match import STEP_COUNT, Entry, Layout, array_problem, flat_leaves

if TYPE_CHECKING:
    from ..stats import StatsTable
    from ._updates import Described, UpdateTracker

__all__ = ["SeriesDispatch"]


class Store(Protocol):
    """What a dispatch reads and keeps in the :class:`~._series.SeriesStore` that made it."""

    layouts: dict  # (tree kind, treedef, structure's memo id) -> Layout
    problems: dict[str, list[str]]
    updates: UpdateTracker


class SeriesDispatch:
    """One refresh's series: :meth:`prepare` gives the arrays to reduce with the parameters,
    :meth:`finish` turns their statistics into :class:`SeriesColumns`. Made by :class:`SeriesStore`."""

    def __init__(
        self,
        store: Store,  # the SeriesStore that made it: its layouts, problems and update tracker
        grads: Any,
        grads_step: int | None,
        optimizer: nnx.Optimizer | None,
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

    def prepare(self, described: Described, without: tuple[str, ...] = ()) -> tuple[list, tuple | None]:
        """The arrays to reduce after the parameters and their layout key (None: none). ``without``:
        the inputs left out of this refresh (their program is compiling: :meth:`fallbacks`)."""
        self._entries, self._problems, self.groups, self._step_at = [], [], {}, None
        self._unmatched_more = 0
        self.waiting = bool(without)
        memo = described.structure.derived  # this package's keys in what the structure keeps
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
            except Exception as e:  # noqa: BLE001 - a boundary (the user's tree: its pytree code may raise anything)
                logging.getLogger("nnx_lab").debug("nnx_lab: the %s could not be flattened", what, exc_info=True)
                self._problems.append(f"{what}: {one_line(e)}")  # the status says it; the other inputs go on
                continue
            bad: dict[str, list[str]] = {}
            matched = unmatched = 0
            reshaped: list[Entry] = []  # a Variable's path with another shape (a transposed gradient)
            integers: list[str] = []  # a gradient or update of integers: no norm, no ratio
            steps = 0  # a transform's step counter (optax's count): the optimizer's step, shown already
            for entry, leaf in zip(layout.entries, leaves):
                if entry.row == STEP_COUNT:
                    steps += 1
                    continue
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
                self._problems.append(f"{what}: {_leaves(len(texts))} {problem}: {_first(texts)}")
            if reshaped:
                self._problems.append(
                    f"{what}: {_leaves(len(reshaped))} at a Variable's path with another shape, "
                    f"listed as unmatched: {reshaped[0].text}: {reshaped[0].what}"
                )
            if integers:
                self._problems.append(
                    f"{what}: {_leaves(len(integers))} of integers, so no norm nor ratio "
                    f"(a gradient is a float array): {_first(integers)}"
                )
            if len(leaves) > steps and not matched and not bad and not reshaped:
                self._problems.append(
                    f"{what}: no leaf matches a Variable of the model by path and shape (e.g. {next(e.text for e in layout.entries if e.row != STEP_COUNT)})"
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

    def finish(self, table: StatsTable | None, n_rows: int) -> SeriesColumns:
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
            v = m[self._step_at, MAX]
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


def _leaves(n: int) -> str:
    return f"{n:,} lea{'f' if n == 1 else 'ves'}"


def _first(texts: list[str]) -> str:
    return ", ".join(texts[:3]) + (f" and {len(texts) - 3:,} more" if len(texts) > 3 else "")


def _is_integer(leaf: object) -> bool:
    dtype = getattr(leaf, "dtype", None)
    try:
        return dtype is not None and np.dtype(dtype).kind in "biu"
    except TypeError:  # a dtype numpy does not know (a PRNG key): not an integer array
        return False
