"""Modes and ``set_view`` options of every submodule, and acting on them.

The public surface of the views feature; the modules inside are private:

- ``_report``: :func:`view_report` (each instance's ``set_view`` arguments, current values and
  mode; the model train, eval or mixed), ``set_view``'s signature read by ``_signature``;
- ``_actions``: requests on them: a :class:`Scope` (all modules, one class, one path), values
  checked against annotations, ``nnx.view`` models, ``set_attributes`` in place and
  ``train()``/``eval()``, all or nothing, and the Python line that does the same;
- ``_code``: NNX filters as Python text (the line shown is the line that runs).

>>> from flax import nnx
>>> model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
>>> view_report(model).mode, set_mode(model, "eval"), view_report(model).mode
('train', 'model.eval()', 'eval')
"""

from ._actions import (
    Scope,
    ViewError,
    apply_code,
    apply_in_place,
    base_scope,
    class_scope,
    coerce_values,
    make_view,
    scope_for,
    set_mode,
    view_code,
)
from ._code import UNNAMED, filter_code, path_code
from ._report import ViewReport, view_report

__all__ = [
    "UNNAMED",
    "Scope",
    "ViewError",
    "ViewReport",
    "apply_code",
    "apply_in_place",
    "base_scope",
    "class_scope",
    "coerce_values",
    "filter_code",
    "make_view",
    "path_code",
    "scope_for",
    "set_mode",
    "view_code",
    "view_report",
]
