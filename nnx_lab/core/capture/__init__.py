"""Capture what modules ``sow`` and ``perturb``, and their method outputs, without editing the model
(docs/guide/capture.md; the modules: docs/ARCHITECTURE.md; examples: capture_call and capture_report).
"""

from ._call import capture_call
from ._capture import Capture
from ._errors import CapturesInGraph, SownInScan
from ._grads import GradResult, NoPerturbations, intermediate_grads
from ._methods import patched_classes
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
    "flatten_captured",
    "intermediate_grads",
    "module_tree",
    "patched_classes",
    "resolve_types",
    "type_names",
]
