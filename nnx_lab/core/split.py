"""The split report: which Variables each NNX filter takes, which it shadows, what is left.

Filters are order-dependent: the first filter that matches a Variable takes it. The report runs
flax's own predicates (``filterlib.to_predicate``) on every Variable and says, per filter, what it
took; which Variables a later filter also matched (*shadowed*); filters that took nothing; the
remainder when the filters are not exhaustive; and shared Variables.

>>> from flax import nnx
>>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
>>> report = split_report(model, nnx.Param, nnx.BatchStat)
>>> [(f.name, f.count) for f in report.filters]
[('param', 4), ('batch_stat', 2)]
>>> report.exhaustive, report.code("model")
(True, 'graphdef, param, batch_stat = nnx.split(model, nnx.Param, nnx.BatchStat)')
>>> report = split_report(model, ..., nnx.Param)
Traceback (most recent call last):
...
nnx_lab.core.split.SplitError: `...` matches everything, so it can only be the last filter (it is filter 1 of 2)
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

from flax import nnx
from flax.nnx import filterlib

from .._ipython.names import check_name
from . import render
from ._text import ECHO_CHARS, clip, first_line, safe_repr
from .graph import Path, path_text
from .snapshot import Row, snapshot


class SplitError(ValueError):
    """A filter or a split that cannot work as written; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class FilterResult:
    index: int
    label: str  # the filter as the user wrote it (or its repr)
    name: str  # the variable name the magic binds its State to by default
    paths: tuple[Path, ...]  # Variables this filter took
    count: int
    size: int
    bytes: int
    types: dict[str, int]
    shadowing: int  # Variables it took that a later filter matched too


@dataclasses.dataclass(frozen=True)
class SplitRow:
    row: Row
    taken_by: int | None  # index of the filter that took it; None: remainder
    matched_by: tuple[int, ...]  # every filter that matched it


@dataclasses.dataclass(frozen=True)
class SplitReport:
    root_type: str
    filters: tuple[FilterResult, ...]
    rows: tuple[SplitRow, ...]  # one per array: a Variable holding a tuple of arrays has several
    variables: int | None = None  # how many Variables (leaves of nnx.state) were split

    @property
    def variable_count(self) -> int:
        return len(self.rows) if self.variables is None else self.variables

    @property
    def remainder(self) -> tuple[SplitRow, ...]:
        return tuple(r for r in self.rows if r.taken_by is None)

    @property
    def exhaustive(self) -> bool:
        return not self.remainder

    @property
    def shadowed(self) -> tuple[SplitRow, ...]:
        return tuple(r for r in self.rows if len(r.matched_by) > 1)

    @property
    def unused(self) -> tuple[FilterResult, ...]:
        """Filters that took nothing."""
        return tuple(f for f in self.filters if f.count == 0)

    @property
    def shared(self) -> tuple[SplitRow, ...]:
        return tuple(r for r in self.rows if r.row.aliases)

    def code(self, target: str = "model", names: Sequence[str] | None = None) -> str:
        """The plain-Python ``nnx.split`` line that does this split."""
        names = list(names) if names else ["graphdef", *(f.name for f in self.filters)]
        filters = "".join(f", {f.label}" for f in self.filters)
        return f"{', '.join(names)} = nnx.split({target}{filters})"

    def problems(self) -> list[str]:
        """One line per thing a careful user would want to know before trusting the split."""
        lines = []
        for f in self.unused:
            lines.append(f"filter {f.index + 1} ({f.label}) took nothing")
        groups: dict[tuple[int, int], list[str]] = {}
        for r in self.shadowed:
            for later in r.matched_by[1:]:
                groups.setdefault((r.taken_by, later), []).append(r.row.path_text)
        for (first, later), paths in groups.items():
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            lines.append(
                f"{len(paths)} Variable{'s' if len(paths) > 1 else ''} matched by "
                f"{self.filters[later].label} went to the earlier {self.filters[first].label} ({shown})"
            )
        if self.remainder:
            shown = ", ".join(r.row.path_text for r in self.remainder[:5])
            more = f" and {len(self.remainder) - 5} more" if len(self.remainder) > 5 else ""
            lines.append(
                f"not exhaustive: {len(self.remainder)} Variables matched no filter ({shown}{more}); "
                "add `...` as the last filter to collect them"
            )
        return lines

    def to_dict(self) -> dict:
        """Plain JSON-able data for the report widget."""
        return {
            "root_type": self.root_type,
            "filters": [
                {
                    "label": f.label,
                    "name": f.name,
                    "count": f.count,
                    "size": f.size,
                    "bytes": f.bytes,
                    "types": f.types,
                    "shadowing": f.shadowing,
                }
                for f in self.filters
            ],
            "rows": {
                "path": [r.row.path_text for r in self.rows],
                "type": [r.row.type for r in self.rows],
                "shape": [list(r.row.shape) if r.row.shape is not None else None for r in self.rows],
                "dtype": [r.row.dtype for r in self.rows],
                "nbytes": [r.row.nbytes for r in self.rows],
                "taken_by": [r.taken_by for r in self.rows],
                "matched_by": [list(r.matched_by) for r in self.rows],
                "aliases": [[path_text(a) for a in r.row.aliases] for r in self.rows],
            },
            "problems": self.problems(),
        }

    def to_text(self, names: Sequence[str] | None = None) -> str:
        """Plain text; ``names``: the names bound (graphdef first), when not the default ones."""
        return render.split_text(self, names)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return render.split_html(self)

    def to_html(self, target: str = "model", names: Sequence[str] | None = None) -> str:
        return render.split_html(self, target=target, names=names)


def split_report(obj: Any, *filters: Any, labels: Sequence[str] | None = None) -> SplitReport:
    """Which Variables of ``obj`` each filter takes, in order, as ``nnx.split(obj, *filters)`` would.

    Args:
      obj: what :func:`nnx_lab.snapshot` accepts (an ``nnx.Module``, an ``nnx.State``, ...).
      *filters: NNX filters, as for ``nnx.split``; none means ``...`` (everything).
      labels: the filters as the user wrote them, one per filter (the magic passes the
        source text).

    Raises:
      SplitError: (a ``ValueError``) a filter flax does not accept, ``...``/``True`` before the
        last position, a filter that raises on some Variable (naming the filter and the path),
        or ``labels`` not one per filter.
      TypeError: ``obj`` is not a model.

    >>> from flax import nnx
    >>> report = split_report(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Param, ...)
    >>> print(report.to_text())
    split of Linear: 2 Variables into 2 filters
      [1] nnx.Param -> param: 2 Variables, 36 B (Param 2)
      [2] ... -> rest: 0 Variables, 0 B
      ! filter 2 (...) took nothing
    """
    if not filters:
        filters = (...,)
    if labels is not None:
        if isinstance(labels, str) or len(labels) != len(filters):
            given = 1 if isinstance(labels, str) else len(labels)
            raise SplitError(f"labels= gives {given} labels for {len(filters)} filters; give one per filter")
        labels = [clip(str(label)) for label in labels]
    else:
        labels = [filter_label(f) for f in filters]
    predicates = []
    for i, f in enumerate(filters):
        if (f is ... or f is True) and i != len(filters) - 1:
            raise SplitError(
                f"`{labels[i]}` matches everything, so it can only be the last filter "
                f"(it is filter {i + 1} of {len(filters)})"
            )
        try:
            predicates.append(filterlib.to_predicate(f))
        except Exception:
            # flax's own message may be about its own formatting (an int filter: "Invalid format
            # specifier"), so say what a filter is instead.
            raise SplitError(
                f"filter {i + 1} ({labels[i]}) is not an NNX filter ({type(f).__name__}): a filter is a "
                "Variable type, a path string, a function (path, value) -> bool, a tuple of filters, "
                "nnx.All/Any/Not/PathContains/..., or ... / True last"
            ) from None
    snap = snapshot(obj, stats=False)
    variables = list(nnx.to_flat_state(nnx.state(obj)))
    rows_of = _rows_by_variable(snap.rows, variables)
    names = default_names(filters)
    taken: list[list[Path]] = [[] for _ in filters]
    shadowing = [0] * len(filters)
    rows = []
    # A trailing `...`/True matches everything by definition; counting it would call every
    # Variable "shadowed". Its only matches are the Variables nothing earlier took.
    catch_all = len(filters) - 1 if filters[-1] is ... or filters[-1] is True else None
    for path, variable in variables:
        matched = []
        for i, predicate in enumerate(predicates):
            if i == catch_all and matched:
                continue
            try:
                if predicate(path, variable):
                    matched.append(i)
            except Exception as e:
                raise SplitError(
                    f"filter {i + 1} ({labels[i]}) raised {type(e).__name__} on {path_text(path)}: {first_line(str(e))}"
                ) from None
        first = matched[0] if matched else None
        if first is not None:
            taken[first].append(path)
            if len(matched) > 1:
                shadowing[first] += 1
        rows.extend(SplitRow(row, first, tuple(matched)) for row in rows_of[path])
    results = []
    for i in range(len(filters)):
        took = [row for p in taken[i] for row in rows_of[p]]
        types: dict[str, int] = {}
        for p in taken[i]:
            kind = rows_of[p][0].type
            types[kind] = types.get(kind, 0) + 1
        results.append(
            FilterResult(
                i,
                labels[i],
                names[i],
                tuple(taken[i]),
                len(taken[i]),
                sum(r.size or 0 for r in took),
                sum(r.nbytes or 0 for r in took),
                types,
                shadowing[i],
            )
        )
    return SplitReport(snap.root_type, tuple(results), tuple(rows), len(variables))


def _rows_by_variable(rows: Sequence[Row], variables: list) -> dict[Path, list[Row]]:
    """The snapshot rows of each leaf of ``nnx.state``: its own row; the rows under its path when
    the Variable holds several arrays (a sown tuple: ``features[0]``, ``features[1]``); else one row
    without an array (a function assigned as an attribute, a Variable holding ``None``)."""
    by_path = {row.path: row for row in rows}
    under: dict[Path, list[Row]] = {}
    for row in rows:
        for n in range(1, len(row.path)):
            under.setdefault(tuple(row.path[:n]), []).append(row)
    out = {}
    for path, leaf in variables:
        if path in by_path:
            out[path] = [by_path[path]]
        elif under.get(path):
            out[path] = under[path]
        else:
            kind = type(leaf).__name__
            out[path] = [
                Row(
                    path=path,
                    type=kind,
                    shape=None,
                    dtype=None,
                    size=0,
                    nbytes=0,
                    sharding=None,
                    devices=None,
                    metadata=None,
                    aliases=(),
                    status="non_numeric",
                    stats=None,
                    note="no array",
                )
            ]
    return out


def filter_label(f: Any) -> str:
    """How a filter reads in Python source (the magic passes the user's own text instead).

    >>> filter_label(nnx.Param), filter_label(...), filter_label((nnx.Param, "lora"))
    ('nnx.Param', '...', "(nnx.Param, 'lora')")
    """
    if f is ...:
        return "..."
    if isinstance(f, type):
        return f"nnx.{f.__name__}" if getattr(nnx, f.__name__, None) is f else f.__name__
    if isinstance(f, tuple):
        return "(" + ", ".join(filter_label(x) for x in f) + ("," if len(f) == 1 else "") + ")"
    text = safe_repr(f, ECHO_CHARS)
    if type(f).__module__ == filterlib.__name__ and getattr(nnx, type(f).__name__, None) is type(f):
        return f"nnx.{text}"
    return text


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _name_of(f: Any) -> str | None:
    if f is ... or f is True:
        return "rest"
    if f is None or f is False:
        return "nothing"
    if isinstance(f, type):
        return _snake(f.__name__)
    if isinstance(f, str):
        return f
    if isinstance(f, filterlib.OfType):
        return _name_of(f.type)
    if isinstance(f, filterlib.WithTag):
        return _name_of(f.tag)
    if isinstance(f, filterlib.PathContains):
        return _name_of(str(f.key))
    if isinstance(f, filterlib.Not):
        inner = _name_of(f.predicate)
        return f"not_{inner}" if inner else None
    if isinstance(f, (tuple, filterlib.Any, filterlib.All)):
        parts = [_name_of(p) for p in (f if isinstance(f, tuple) else f.predicates)]
        joiner = "_and_" if isinstance(f, filterlib.All) else "_or_"
        return joiner.join(parts) if all(parts) else None
    name = getattr(f, "__name__", None)
    return None if name == "<lambda>" else name


def _bindable(name: str) -> bool:
    try:
        check_name(name)
    except ValueError:
        return False
    return True


def default_names(filters: Sequence[Any]) -> list[str]:
    """Python names for the States of a split: ``param``, ``batch_stat``, ``rest`` for ``...``.

    >>> default_names([nnx.Param, nnx.BatchStat, ...])
    ['param', 'batch_stat', 'rest']
    >>> default_names(["params", nnx.PathContains("lora"), lambda p, v: True, (nnx.Param, nnx.BatchStat)])
    ['params', 'lora', 'filter3', 'param_or_batch_stat']
    """
    names: list[str] = []
    for i, f in enumerate(filters):
        name = _name_of(f)
        if not name or not _bindable(name) or name in names or name == "graphdef":
            name = f"filter{i + 1}"
        names.append(name)
    return names
