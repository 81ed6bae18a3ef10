"""nnx_lab: see everything about a Flax NNX model in a notebook.

Public API (small on purpose):

- ``snapshot(obj, *, stats=True, layers=None) -> Snapshot``: one row per Variable with its
  description and on-device statistics; no array is copied to the host.
- ``Snapshot``, ``Row``: the plain data a snapshot is made of.
- ``watch(model) -> StateViewer``: a live widget of every Variable, refreshed after each
  cell, on ``viewer.tick()`` / ``viewer.track(batches)``, or from a background thread;
  ``watch("model")`` follows a name a functional loop rebinds (``model = nnx.merge(...)``).
- ``split_report(model, *filters)``: which Variables each NNX filter takes, shadows or leaves.
- ``view_report(model)``: each submodule's ``set_view`` options and current values; train/eval/mixed.
- ``view_panel(model)`` / ``mode_toggle(model)``: those options as controls: create ``nnx.view``
  models, set them in place, switch train/eval; clicks made while a cell runs apply between steps.
- ``Capture(model, types=..., methods=..., only=...)``: a context manager that collects what the
  model sows (``cap.captured``, an ``nnx.State``); ``capture_call(model, fn, *args)`` does it for
  one call, ``intermediate_grads(model, loss_fn, *args)`` adds the gradient at each ``perturb``
  point, and ``capture_report(captured)`` describes the values (statistics, histograms).
- ``capture_panel(model)``: toggles for what ``nnx.capture`` collects; ``panel(x)`` calls the
  model and shows every captured value, ``panel.grads(loss_fn, x)`` their gradients.
- ``compare(a, b, *, tol=0.0, map=None, layers=None) -> Comparison``: what differs between two
  models, states, snapshots or Orbax checkpoint directories (``snapshot("path")`` reads one too).
- ``summary(model, *args, method="__call__", grad=False)``: shapes, parameters, FLOPs and bytes of
  every module call, from one trace (``Summary``: rows, text, HTML, ``to_dict()``, ``to_pandas()``).
- ``memory()`` -> ``Ledger``: every live array on each device under the name holding it (a model by
  Variable type, an optimizer, a pytree, ``Out[n]``, "(unreached)"), and what frees the most;
  ``memory(step, *args)`` -> ``StepPlan``: the step compiled, not run: XLA's memory analysis against
  the device limit.
- ``find_nonfinite(fn, *args, **kwargs)`` -> ``NonfiniteReport``: where NaN/Inf first appears in
  ``fn`` (a forward pass or a loss): already in the input, or the module call and primitive that
  first produced it in the forward or the backward pass; the model is left unchanged.
- ``%load_ext nnx_lab``: registers ``%nnx_snapshot``, ``%nnx_watch``, ``%nnx_split`` /
  ``%%nnx_split``, ``%nnx_mode``, ``%nnx_view``, ``%%nnx_capture``, ``%nnx_memory``, ``%%nnx_nonfinite`` and the hook that refreshes viewers after each cell
  (and, after an out-of-memory error, prints what holds the device's memory).

Importing nnx_lab is cheap: jax and flax are imported the first time a model is
inspected, not before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "snapshot",
    "Snapshot",
    "Row",
    "watch",
    "StateViewer",
    "split_report",
    "view_report",
    "capture_panel",
    "CapturePanel",
    "Capture",
    "capture_call",
    "capture_report",
    "CaptureReport",
    "intermediate_grads",
    "view_panel",
    "mode_toggle",
    "ViewPanel",
    "summary",
    "Summary",
    "compare",
    "Comparison",
    "memory",
    "Ledger",
    "StepPlan",
    "find_nonfinite",
    "NonfiniteReport",
    "NonFiniteStep",
    "load_ipython_extension",
    "unload_ipython_extension",
]

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .core.capture import Capture, CaptureReport, capture_call, capture_report, intermediate_grads
    from .core.compare import Comparison, compare
    from .core.memory import Ledger, StepPlan, memory
    from .core.nonfinite import NonfiniteReport, find_nonfinite
    from .core.snapshot import Row, Snapshot, snapshot
    from .core.split import split_report
    from .core.summary import Summary, summary
    from .core.training import NonFiniteStep
    from .core.views import view_report
    from .widgets.capture import CapturePanel, capture_panel
    from .widgets.viewer import StateViewer
    from .widgets.views import ViewPanel, mode_toggle, view_panel
    from .widgets.watch import watch


# Where each public name lives, imported on first use: `import nnx_lab` and `%load_ext nnx_lab`
# must not start a JAX backend.
_LAZY = {
    "snapshot": "core.snapshot",
    "Snapshot": "core.snapshot",
    "Row": "core.snapshot",
    "split_report": "core.split",
    "view_report": "core.views",
    "watch": "widgets.watch",
    "StateViewer": "widgets.viewer",
    "capture_panel": "widgets.capture",
    "CapturePanel": "widgets.capture",
    "Capture": "core.capture",
    "capture_call": "core.capture",
    "capture_report": "core.capture",
    "CaptureReport": "core.capture",
    "intermediate_grads": "core.capture",
    "view_panel": "widgets.views",
    "mode_toggle": "widgets.views",
    "ViewPanel": "widgets.views",
    "compare": "widgets.compare",  # core.compare's, with the widget as a Comparison's display in a kernel
    "Comparison": "widgets.compare",
    "summary": "widgets.summary",  # core.summary's, with the widget as a Summary's display in a kernel
    "Summary": "widgets.summary",
    "memory": "widgets.memory",  # core.memory's, with the widget as a Ledger's display in a kernel
    "Ledger": "widgets.memory",
    "StepPlan": "widgets.memory",
    "find_nonfinite": "widgets.nonfinite",  # core.nonfinite's, with the widget as a report's display in a kernel
    "NonfiniteReport": "widgets.nonfinite",
    "NonFiniteStep": "core.training",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nnx_lab' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


def load_ipython_extension(ipython: InteractiveShell | None) -> None:
    """``%load_ext nnx_lab``: register nnx_lab's magics in this shell."""
    from ._ipython.extension import load

    load(ipython)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Remove everything ``load_ipython_extension`` added."""
    from ._ipython.extension import unload

    unload(ipython)
