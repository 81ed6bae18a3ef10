"""Capture what modules ``sow`` and ``perturb``, and their method outputs, without editing the model.

The public surface of the capture feature; the modules inside are private:

- ``_capture``: :class:`Capture` (arm, run, disarm), with ``_options`` (its arguments checked),
  ``_collect`` (values out of and into the armed entries) and ``_call`` (:func:`capture_call`);
- ``_arming``: the marker Variables, ``__captures__`` as flax shows it, the user's own
  ``nnx.capture`` inside ours, Ctrl-C deferred while (dis)arming;
- ``_methods``: method outputs (class methods wrapped, reference counted);
- ``_linen``: Linen ``sow('intermediates', ...)`` inside ``nnx.bridge.ToNNX``;
- ``_errors``: upstream limits as one-line errors;
- ``_types``: Variable types from names; ``_grads``: gradients at ``perturb`` points;
- ``_report``: the report, from ``_table`` (rows and histograms) and ``_messages`` (what to tell the user); ``_toggles``: the panel's toggles without UI.

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
>>> y, captured = capture_call(model, model, jnp.ones((1, 2)), methods=True)
>>> capture_report(captured).to_text().splitlines()[0]
'captured 2 arrays (Intermediate)'
"""

from ._call import capture_call
from ._capture import Capture
from ._errors import CapturesInGraph, SownInScan
from ._grads import GradResult, NoPerturbations, intermediate_grads
from ._methods import patched_classes
from ._options import check_model
from ._report import CaptureReport, PendingCaptureReport, capture_report
from ._table import flatten_captured
from ._toggles import MESSAGES as TOGGLE_MESSAGES
from ._toggles import CaptureToggles, Modules, Ticked, module_tree
from ._types import DEFAULT_TYPES, caller_namespace, resolve_types, type_names

__all__ = [
    "DEFAULT_TYPES",
    "Capture",
    "CaptureReport",
    "CaptureToggles",
    "CapturesInGraph",
    "GradResult",
    "Modules",
    "NoPerturbations",
    "PendingCaptureReport",
    "SownInScan",
    "TOGGLE_MESSAGES",
    "Ticked",
    "caller_namespace",
    "capture_call",
    "capture_report",
    "check_model",
    "flatten_captured",
    "intermediate_grads",
    "module_tree",
    "patched_classes",
    "resolve_types",
    "type_names",
]
