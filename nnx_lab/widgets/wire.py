"""The ``type`` of every message between a widget and its front end, defined once.

Python's senders and handlers use these names; ``tools/js_constants.py`` writes them into
``js/src/shared/constants.js`` as ``MSG`` (same keys), which the front end uses, so the two sides
cannot drift apart unseen (``tests/test_js_generated.py``, ``tests/widgets/test_wire.py``).
Payloads here are what the message carries besides ``type``; the TypedDicts at the end type each
message, and the tool writes them as TypeScript types into ``js/src/shared/wire.d.ts``, which
``tsc`` checks the front end's JSDoc against (``npm test``). No imports but ``typing``: the tool reads
this module without jax or IPython.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# -- every widget with requests (widgets/_base.py) --------------------------------------------
#: Python -> browser: the answer to a request, {id: the request's id, state: "queued"|"done"|"error", ...}
ACK = "ack"

# -- the viewer (widgets/viewer.py, viewer_checkpoint.py; js/src/viewer.js) -------------------
#: browser -> Python: {} send the latest statistics; Python -> browser: {refresh, structure, rows, names,
#: exact, series?} with a float32 buffer of the statistics (and one of the series)
STATS = "stats"
#: browser -> Python: {} refresh now
REFRESH = "refresh"
#: browser -> Python: {stat} send that statistic's history; Python -> browser: {stat, structure, rows,
#: length, refresh} with a float32 buffer [rows, length]
HISTORY = "history"
#: browser -> Python: {} send the scalars; Python -> browser: {names, counts, version} with two float64
#: buffers (steps, values)
SCALARS = "scalars"
#: browser -> Python: {} dismiss the NaN/Inf alert until the next one
CLEAR_ALERT = "clear_alert"
#: browser -> Python: {source: "none"|"stats"|"arrays"|"path", path?} pin a baseline (answered by an ack
#: with a message)
COMPARE_TO = "compare_to"
#: Python -> browser: {refresh, rows, values, baseline} each row's change since the baseline (values None:
#: no baseline)
SINCE = "since"

# -- the views panel (widgets/views.py; js/src/views.js) --------------------------------------
#: browser -> Python: {name, only, values} bind nnx.view(model, ...) to name (answered by an ack)
VIEW = "view"
#: browser -> Python: {only, values} model.set_attributes(...) in place (answered by an ack)
APPLY = "apply"
#: browser -> Python: {mode: "train"|"eval"} model.train() / model.eval() (answered by an ack)
MODE = "mode"

# -- the capture panel's toggles (core/capture/_toggles.py; js/src/capture/toggles.js) ---------
#: browser -> Python: {name, on} collect that Variable type or not
TOGGLE_TYPE = "type"
#: browser -> Python: {on} record method outputs or not
TOGGLE_METHODS = "methods"
#: browser -> Python: {path, on} capture that submodule (and those below it) or not
TOGGLE_MODULE = "module"
#: browser -> Python: {on} capture every submodule or none
TOGGLE_MODULES = "modules"

#: name -> type of every message above: what the front end gets as ``MSG``
MESSAGES: dict[str, str] = {
    name: value for name, value in dict(globals()).items() if name.isupper() and isinstance(value, str)
}
#: the capture panel's toggles (what ``core.capture.CaptureToggles`` answers)
CAPTURE_TOGGLES = (TOGGLE_TYPE, TOGGLE_METHODS, TOGGLE_MODULE, TOGGLE_MODULES)


# -- each message's fields, typed (-> js/src/shared/wire.d.ts) ---------------------------------
# ``Literal[...]`` of ``type`` names the message; keys of a ``total=False`` class may be missing.
# ``Any`` stands for nested data typed on one side only (statistics' exact values, a series' meta).
RequestState = Literal["queued", "done", "error"]
#: a request's id: a number from the request book (js/src/shared/requests.js), the viewer's "refresh-N"
RequestId = int | str


class _AckBase(TypedDict):
    type: Literal["ack"]
    id: RequestId
    state: RequestState


class Ack(_AckBase, total=False):
    """Python -> browser: the answer to request ``id``."""

    message: str  # the viewer's pin (compare_to), checkpoint viewer
    text: str  # views, capture toggles: what was done, or why not
    code: str  # views: the Python the request stands for


class _StatsBase(TypedDict):
    type: Literal["stats"]
    refresh: int
    structure: int
    rows: int
    names: list[str]
    exact: Any


class Stats(_StatsBase, total=False):
    """Python -> browser: the latest statistics (buffer 0: float32 [names, rows])."""

    series: Any  # with buffer 1: float32 [series, stats + ratio, rows]


class History(TypedDict):
    """Python -> browser: one statistic's history (buffer 0: float32 [rows, length])."""

    type: Literal["history"]
    stat: str
    structure: int
    rows: int
    length: int
    refresh: int


class Scalars(TypedDict):
    """Python -> browser: the logged scalars' curves (buffers: float64 steps, float64 values)."""

    type: Literal["scalars"]
    names: list[str]
    counts: list[int]
    version: int


class _SinceBase(TypedDict):
    type: Literal["since"]
    values: list[Any] | None
    baseline: dict[str, Any] | None


class Since(_SinceBase, total=False):
    """Python -> browser: each row's change since the baseline (``values`` None: no baseline)."""

    refresh: int
    rows: int
    problem: str | None


class _RequestBase(TypedDict, total=False):
    id: RequestId  # echoed in the ack


class StatsRequest(_RequestBase):
    type: Literal["stats"]


class RefreshRequest(_RequestBase):
    type: Literal["refresh"]


class HistoryRequest(_RequestBase):
    type: Literal["history"]
    stat: str


class ScalarsRequest(_RequestBase):
    type: Literal["scalars"]


class ClearAlertRequest(_RequestBase):
    type: Literal["clear_alert"]


class _CompareToBase(_RequestBase):
    type: Literal["compare_to"]
    source: Literal["none", "stats", "arrays", "path"]


class CompareToRequest(_CompareToBase, total=False):
    path: str


class ViewRequest(_RequestBase):
    type: Literal["view"]
    name: str
    only: Any
    values: dict[str, Any]


class ApplyRequest(_RequestBase):
    type: Literal["apply"]
    only: Any
    values: dict[str, Any]


class ModeRequest(_RequestBase):
    type: Literal["mode"]
    mode: Literal["train", "eval"]


class ToggleTypeRequest(_RequestBase):
    type: Literal["type"]
    name: str
    on: bool


class ToggleMethodsRequest(_RequestBase):
    type: Literal["methods"]
    on: bool


class ToggleModuleRequest(_RequestBase):
    type: Literal["module"]
    path: str
    on: bool


class ToggleModulesRequest(_RequestBase):
    type: Literal["modules"]
    on: bool


#: every message Python sends a front end, and every one a front end sends Python
TO_BROWSER = (Ack, Stats, History, Scalars, Since)
TO_PYTHON = (
    StatsRequest,
    RefreshRequest,
    HistoryRequest,
    ScalarsRequest,
    ClearAlertRequest,
    CompareToRequest,
    ViewRequest,
    ApplyRequest,
    ModeRequest,
    ToggleTypeRequest,
    ToggleMethodsRequest,
    ToggleModuleRequest,
    ToggleModulesRequest,
)
