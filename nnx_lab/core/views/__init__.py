"""Modes and ``set_view`` options of every submodule (``_report``), and acting on them (``_actions``).

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
