"""The widgets' synced traits, typed: each payload a TypedDict, and :class:`Payload`, the trait that
checks what is assigned to it (as lonboard's traits do).

``snapshot = Payload(ViewerSnapshot).tag(sync=True)`` is a ``traitlets.Dict`` (it syncs, compares and
notifies as before) that checks a value at assignment against its TypedDict: every required key is
there, and each declared key's value has its declared type *at the top level* (``list[...]``: a list,
``dict[...]``: a dict, ``Literal[...]``: one of its values, ``int``/``float``: a number, never a bool).
A wrong payload raises a one-line ``TraitError`` naming the widget, the trait and the key, in Python,
not later in the browser. ``{}`` (a trait's default, the viewer's "no alert") always passes; a key
the TypedDict does not declare passes too (tests/widgets/test_typed_traits.py checks that every
widget's real payloads declare every key and hold their types all the way down).

Nested values are not checked at assignment. A viewer's refresh assigns only ``status`` (its
statistics travel as a binary ``stats`` message; ``snapshot`` is assigned when the rows change):
at 10,000 Variables the top-level check costs 2.8 µs (status) and 1.4 µs (snapshot), under 0.001 %
of a warm refresh (717 ms on the loaded 2-core machine), while walking the snapshot's columns would
cost 162 ms, 23 % of it (``python benchmarks/bench_trait_validation.py``). :func:`problem` with
``deep=True`` walks everything (what the tests use). No imports but ``typing``, ``math`` and ``traitlets``.
"""

from __future__ import annotations

import math
import types
import typing
from typing import Any, Callable, Literal, TypedDict

import traitlets

__all__ = ["Payload", "problem"]


# -- the payloads --------------------------------------------------------------------------------
class SnapshotPayload(TypedDict):
    """``Snapshot.to_dict()``: columns of the rows and their statistics (core/snapshot)."""

    version: int
    root_type: str
    nodes: dict[str, list[Any]]  # parent, key, type per container
    rows: dict[str, list[Any]]  # a column per field
    stats: dict[str, list[float | None]]  # a column per statistic
    tables: dict[str, list[Any]]  # repeated strings, indexed by the rows' columns
    totals: dict[str, dict[str, int]]  # per Variable type (and "all"): count, size, bytes
    devices: dict[str, Any]


class _ViewerSnapshotBase(SnapshotPayload):
    refresh: int
    structure: int


class ViewerSnapshot(_ViewerSnapshotBase, total=False):
    """A viewer's ``snapshot`` trait: the rows and the refresh and structure they belong to."""

    series: dict[str, Any]  # gradients, optimizer state: meta and values (core/training)


ViewState = Literal["waiting", "live", "error", "missing", "gone", "static"]


class _ViewerStatusBase(TypedDict):
    state: ViewState
    message: str
    last_refresh: float | None
    refreshes: int | None  # None: a checkpoint (read, not refreshed)


class ViewerStatus(_ViewerStatusBase, total=False):
    """A viewer's status line (core/live's StatusLine.to_dict; the checkpoint viewer's)."""

    cost_ms: float | None
    device_ms: float | None
    interval_s: float


class Alert(TypedDict):
    """A viewer's NaN/Inf alert (core.training's NonfiniteAlert.to_dict), or ``{}`` when none."""

    step: int
    refresh: int
    where: str
    source: str  # "variable", "scalar", or a series' name
    nan: int
    inf: int
    outside: bool
    now_variables: int
    now_scalars: list[str]
    head: str
    tail: str


class _CaptureStatusBase(TypedDict):
    target: str
    message: str
    level: Literal["", "error"]


class CaptureStatus(_CaptureStatusBase, total=False):
    """The capture panel's and report's status line."""

    calls: int
    kind: Literal["call", "grads"]
    elapsed_ms: float
    loss: float | None  # finite, else None (JSON has no NaN)
    loss_text: str  # the loss as shown, by format_number ("NaN", "inf" too); "" for a plain call


class CaptureControls(TypedDict):
    """The capture panel's toggles (core.capture's CaptureToggles.to_dict) and its answer state."""

    rev: int
    types: list[dict[str, Any]]  # name, on, title
    methods: bool
    modules: list[dict[str, Any]]  # path, key, parent, cls, on
    answered: int | float | str | None  # the last toggle message's id
    pending: bool


class CaptureReport(TypedDict):
    """A capture report (core.capture's CaptureReport.to_dict)."""

    snapshot: SnapshotPayload
    hist: dict[str, Any]  # bins, rows
    grads: dict[str, Any] | None  # snapshot, hist
    messages: list[Any]
    types: list[str]
    seen: list[str]


class ComparisonPayload(TypedDict):
    """``nnx_lab.compare``'s widget data (core.compare's comparison_payload)."""

    verdict: str
    a_type: str
    b_type: str
    tol: float
    loadable: bool
    identical: bool
    counts: dict[str, int]
    statuses: dict[str, str]
    modules: list[dict[str, Any]]
    rows: list[dict[str, Any]]


class LedgerPayload(TypedDict):
    """``nnx_lab.memory``'s widget data (core.render's memory_payload)."""

    title: str
    note: str
    devices: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    left: str
    empty: str
    freeing_title: str
    freeing_note: str
    freeing: list[dict[str, Any]]


class NonfiniteReport(TypedDict):
    """``find_nonfinite``'s widget data (core.nonfinite's NonfiniteReport.payload): strings only."""

    verdict: str
    direction: Literal["forward", "backward", "input", "finite"]  # input: NaN/Inf already in fn's arguments
    lines: list[str]
    bad: list[dict[str, str]]  # a row per bad value: its cells by bad_columns' keys
    bad_columns: list[list[str]]  # [key, label] of the bad table's columns (Python's labels)
    rows: list[dict[str, Any]]
    bad_caption: str
    note: str


class SplitReport(TypedDict):
    """``%%nnx_split``'s report (core.split's SplitReport.to_dict) with its code and names."""

    root_type: str
    filters: list[dict[str, Any]]
    rows: dict[str, list[Any]]
    problems: list[Any]
    code: str
    names: list[str]


class SummaryPayload(TypedDict):
    """``nnx_lab.summary``'s widget data (widgets/summary.py's payload)."""

    title: str
    header: list[str]
    rows: list[dict[str, Any]]
    total_flops: int
    backward: bool


class _ViewsBase(TypedDict):
    variant: Literal["views", "modes"]
    root: str
    target: str
    default_name: str
    mode: str
    summary: str
    count_text: str
    disagreeing: list[Any]
    message: str
    base_only: str
    classes: list[dict[str, Any]]


class ViewsPayload(_ViewsBase, total=False):
    """The view panel's data (widgets/views.py); ``gone``: its model went."""

    gone: bool


#: every synced payload, written as TypeScript into js/src/shared/wire.d.ts by tools/js_constants.py
PAYLOADS = (
    SnapshotPayload,
    ViewerSnapshot,
    ViewerStatus,
    Alert,
    CaptureStatus,
    CaptureControls,
    CaptureReport,
    ComparisonPayload,
    LedgerPayload,
    NonfiniteReport,
    SplitReport,
    SummaryPayload,
    ViewsPayload,
)


# -- checking ------------------------------------------------------------------------------------
Check = Callable[[object], "str | None"]  # why a value is not of a type (None: it is)


def _name(hint: object) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _checker(hint: object, deep: bool) -> Check:
    """What checks a value against ``hint``: at the top level only, or ``deep`` (lists' items, dicts' values)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return lambda v: None
    if hint is None or hint is type(None):
        return lambda v: None if v is None else f"is {type(v).__name__}, not None"
    if origin is Literal:
        allowed = set(args)
        return lambda v: (
            None if isinstance(v, (str, int)) and v in allowed else f"is {v!r}, not one of {sorted(allowed)}"
        )
    if origin in (typing.Union, types.UnionType):
        checks = [_checker(a, deep) for a in args]
        text = " | ".join(_name(a) for a in args)

        def union(v: object) -> str | None:
            said: list[str] = []
            for check in checks:
                p = check(v)
                if p is None:
                    return None
                said.append(p)
            finite = [p for p in said if p.endswith("not a finite number")]  # a float, but NaN/Inf
            return finite[0] if finite else f"is {type(v).__name__}, not {text}"

        return union
    if isinstance(hint, type) and typing.is_typeddict(hint):
        schema = hint
        if deep:
            return lambda v: _problem(v, schema, True) if isinstance(v, dict) else f"is {type(v).__name__}, not a dict"
        return _isinstance(dict, "dict")
    if origin is list:
        item = _checker(args[0], True) if deep else None
        return _sequence(item) if item else _isinstance(list, "list")
    if origin is dict:
        value = _checker(args[1], True) if deep else None
        return _mapping(value) if value else _isinstance(dict, "dict")
    if hint is float:
        if deep:  # JSON has no NaN/Inf: jupyter_client sends them as the strings "nan"/"inf", which no widget reads as numbers
            return lambda v: (
                None
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                else f"is {v!r}, not a finite number"
                if isinstance(v, float)
                else f"is {type(v).__name__}, not a number"
            )
        return lambda v: (
            None if isinstance(v, (int, float)) and not isinstance(v, bool) else f"is {type(v).__name__}, not a number"
        )
    if hint is int:
        return lambda v: None if isinstance(v, int) and not isinstance(v, bool) else f"is {type(v).__name__}, not int"
    if hint in (str, bool):
        return _isinstance(hint, hint.__name__)  # type: ignore[union-attr]
    raise TypeError(f"nnx_lab.widgets.traits: no check for {hint!r}")


def _isinstance(kind: type, text: str) -> Check:
    return lambda v: None if isinstance(v, kind) else f"is {type(v).__name__}, not {text}"


def _sequence(item: Check) -> Check:
    def check(v: object) -> str | None:
        if not isinstance(v, list):
            return f"is {type(v).__name__}, not list"
        for i, x in enumerate(v):
            if (p := item(x)) is not None:
                return f"[{i}] {p}"
        return None

    return check


def _mapping(value: Check) -> Check:
    def check(v: object) -> str | None:
        if not isinstance(v, dict):
            return f"is {type(v).__name__}, not dict"
        for k, x in v.items():
            if (p := value(x)) is not None:
                return f"[{k!r}] {p}"
        return None

    return check


_compiled: dict[tuple[type, bool], tuple[frozenset[str], dict[str, Check]]] = {}  # one per TypedDict


def _schema(schema: type, deep: bool) -> tuple[frozenset[str], dict[str, Check]]:
    found = _compiled.get((schema, deep))
    if found is None:
        hints = typing.get_type_hints(schema)
        found = _compiled[schema, deep] = (
            schema.__required_keys__,  # type: ignore[attr-defined]
            {key: _checker(hint, deep) for key, hint in hints.items()},
        )
    return found


def _problem(value: dict, schema: type, deep: bool) -> str | None:
    required, checks = _schema(schema, deep)
    for key in required:
        if key not in value:
            return f"{key!r} missing ({schema.__name__})"
    for key, item in value.items():
        check = checks.get(key)
        if check is not None and (p := check(item)) is not None:
            return f"{key!r} {p}"
    return None


def problem(value: object, schema: type, *, deep: bool = False) -> str | None:
    """Why ``value`` is not the TypedDict ``schema`` (None: it is); ``{}`` passes. ``deep``: nested values too.

    >>> problem({"target": "model", "message": "", "level": "oops"}, CaptureStatus)
    "'level' is 'oops', not one of ['', 'error']"
    >>> problem({"target": "model", "level": ""}, CaptureStatus)
    "'message' missing (CaptureStatus)"
    """
    if not isinstance(value, dict):
        return f"is {type(value).__name__}, not a dict"
    return _problem(value, schema, deep) if value else None


class Payload(traitlets.Dict):
    """A dict trait checked against the TypedDict ``schema`` at assignment (see the module docstring)."""

    def __init__(self, schema: type, **kwargs: Any):
        super().__init__(**kwargs)
        self.schema = schema
        _schema(schema, False)  # a hint with no check fails here, at class definition

    def validate(self, obj: traitlets.HasTraits, value: object) -> dict[str, Any] | None:
        value = super().validate(obj, value)
        if value:
            said = _problem(value, self.schema, False)
            if said is not None:
                raise traitlets.TraitError(f"{type(obj).__name__}.{self.name}: {said}")
        return value

    def info(self) -> str:
        return f"a {self.schema.__name__} dict"
