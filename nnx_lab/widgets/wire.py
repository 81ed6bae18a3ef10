"""The ``type`` of every message between a widget and its front end, defined once.

Python's senders and handlers use these names; ``tools/js_constants.py`` writes them into
``js/src/shared/constants.js`` as ``MSG`` (same keys), which the front end uses, so the two sides
cannot drift apart unseen (``tests/test_js_generated.py``, ``tests/widgets/test_wire.py``).
Payloads here are what the message carries besides ``type``. No imports: the tool reads this
module without jax or IPython.
"""

from __future__ import annotations

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
