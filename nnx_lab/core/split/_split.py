"""Working out a split report: flax's own predicates run on every Variable, in order (see the package)."""

from __future__ import annotations

import collections
import logging
from typing import Any, Sequence

from flax import nnx
from flax.nnx import filterlib

from ..graph import Path, path_text
from ..snapshot import Row, snapshot
from ..text import clip, first_line
from ..views import filter_code
from ._names import default_names
from ._report import FilterResult, SplitError, SplitReport, SplitRow

_log = logging.getLogger("nnx_lab")


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
        labels = [filter_code(f, label=True) or "" for f in filters]  # a label is never None
    predicates = []
    for i, f in enumerate(filters):
        if (f is ... or f is True) and i != len(filters) - 1:
            raise SplitError(
                f"`{labels[i]}` matches everything, so it can only be the last filter "
                f"(it is filter {i + 1} of {len(filters)})"
            )
        try:
            predicates.append(filterlib.to_predicate(f))
        except Exception:  # noqa: BLE001 - boundary: the user's filter; said in one line below
            _log.debug("nnx_lab: filter %d not an NNX filter", i + 1, exc_info=True)
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
            except Exception as e:  # noqa: BLE001 - boundary: the user's filter raised; said in one line
                _log.debug("nnx_lab: filter %d raised on %s", i + 1, path_text(path), exc_info=True)
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
        types = dict(collections.Counter(rows_of[p][0].type for p in taken[i]))
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
