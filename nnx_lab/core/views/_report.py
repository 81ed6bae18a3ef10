"""Modes of every submodule: ``set_view`` options, current values, and train / eval / mixed.

``nnx.view_info`` lists each Module *class*'s ``set_view`` arguments as text; this module gives
the same per *instance*, as data, with the instance's current value of each argument, and a
summary of the train/eval mode (``deterministic`` / ``use_running_average``: ``False`` is train,
``True`` is eval, ``None`` is decided at call time).

>>> from flax import nnx
>>> model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)),
...                        nnx.BatchNorm(2, rngs=nnx.Rngs(0)))
>>> report = view_report(model)
>>> [(m.path_text, m.class_name, [a.name for a in m.args]) for m in report.modules]
[('layers[1]', 'Dropout', ['deterministic']), ('layers[2]', 'BatchNorm', ['use_running_average'])]
>>> report.mode, model.eval(), view_report(model).mode
('train', None, 'eval')
>>> model.layers[1].deterministic = False          # Dropout trains, BatchNorm evaluates
>>> view_report(model).mode, view_report(model).disagreeing
('mixed', ('layers[2]',))
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from flax import nnx
from flax.nnx import filterlib

from .. import compat, render
from ..graph import Path, aliases_at, is_module_path, path_roots, path_text, shared_prefixes
from ..text import one_line
from ._code import UNNAMED, filter_code
from ._signature import set_view_params, simple_types

_log = logging.getLogger("nnx_lab")

#: attributes that say a module's mode, and the value each has in eval mode. flax's train()/eval()
#: set the first two; ``training`` is the convention of modules without set_view that a user
#: switches with ``nnx.with_attributes(model, training=...)`` (flax's view guide).
EVAL_VALUES = {"deterministic": True, "use_running_average": True, "training": False}
MODE_ARGS = tuple(EVAL_VALUES)
#: what a mode attribute without set_view reads as in the report
_ATTRIBUTE_DOC = "an attribute (no set_view): set it with nnx.with_attributes or set_attributes"
_MISSING = object()


class Unreadable:
    """An attribute whose getter raised: shown as the error, never treated as a mode."""

    def __init__(self, error: BaseException):
        self.error = one_line(error, 120)

    def __repr__(self) -> str:
        return f"<getter raised {self.error}>"


def _current(module: Any, name: str) -> Any:
    try:
        return getattr(module, name, _MISSING)
    except Exception as e:  # noqa: BLE001 - boundary: a user property may raise anything; shown as Unreadable
        _log.debug("nnx_lab: %s.%s unreadable", type(module).__name__, name, exc_info=True)
        return Unreadable(e)


@dataclasses.dataclass(frozen=True)
class ViewArg:
    name: str
    annotation: str  # as written in set_view's signature
    default: Any
    doc: str  # from the `Args:` section as nnx.view_info parses it; "" when absent
    current: Any  # the instance's attribute of that name; MISSING when it has none
    kind: str  # "tri_bool" (bool | None), "bool", "int", or "literal" (anything else)

    @property
    def has_current(self) -> bool:
        return self.current is not _MISSING

    @property
    def types(self) -> frozenset[str] | None:
        """The simple types the annotation allows (``{'int', 'None'}``), or None when it names
        anything else (then any value is passed on to ``set_view`` unchecked)."""
        return simple_types(self.annotation)


@dataclasses.dataclass(frozen=True)
class ModuleViews:
    path: Path
    class_name: str
    args: tuple[ViewArg, ...]
    signature: str  # set_view's signature: what view_info shows without a docstring
    cls: type = dataclasses.field(default=object, compare=False, repr=False)
    has_set_view: bool = True  # False: a mode attribute (``training``) on a module without set_view
    aliases: tuple[Path, ...] = ()  # the other paths of this same module (tied, or reached again by a cycle)

    @property
    def path_text(self) -> str:
        return path_text(self.path) or "(root)"

    @property
    def mode(self) -> str | None:
        """'train', 'eval', 'unset' (decided at call time) or None (no mode argument)."""
        values = {
            None if a.current is None else ("eval" if a.current == EVAL_VALUES[a.name] else "train")
            for a in self.args
            if a.name in EVAL_VALUES and a.has_current and isinstance(a.current, (bool, type(None)))
        }
        if not values:
            return None
        if values == {None}:
            return "unset"
        return values.pop() if len(values) == 1 else "mixed"


@dataclasses.dataclass(frozen=True)
class ViewReport:
    root_type: str
    modules: tuple[ModuleViews, ...]
    only: str | None = None  # the ``only=`` filter as text, when one was given

    @property
    def mode(self) -> str:
        """'train', 'eval', 'mixed', 'unset' (every mode decided at call time) or 'none'.

        Modules left ``None`` (decided at call time, like a fresh MultiHeadAttention) do not make
        a model mixed: only modules set to train and others set to eval do.
        """
        modes = {m.mode for m in self.modules if m.mode in ("train", "eval", "mixed")}
        if not modes:
            return "unset" if any(m.mode == "unset" for m in self.modules) else "none"
        return modes.pop() if len(modes) == 1 else "mixed"

    @property
    def disagreeing(self) -> tuple[str, ...]:
        """When mixed: the paths whose mode is not the most common one."""
        modes = [m.mode for m in self.modules if m.mode in ("train", "eval", "mixed")]
        if len(set(modes)) <= 1:
            return ()
        common = max(dict.fromkeys(modes), key=modes.count)  # ties: the mode seen first
        return tuple(m.path_text for m in self.modules if m.mode in ("train", "eval", "mixed") and m.mode != common)

    @property
    def unset(self) -> tuple[str, ...]:
        """Paths whose mode is decided at call time (``None``)."""
        return tuple(m.path_text for m in self.modules if m.mode == "unset")

    def count_text(self) -> str:
        """The panel header's count: ``4 modules with set_view, 3 decided at call time`` (a model that
        says "train" while most of its modules are unset says so)."""
        text = f"{render.count_noun(len(self.modules), 'module')} with set_view"
        if self.unset and self.mode != "unset":
            text += f", {len(self.unset)} decided at call time"
        return text

    def summary(self) -> str:
        if not self.modules:
            if self.only is not None:
                return f"{self.root_type}: only={self.only} matched no module with set_view"
            return f"{self.root_type}: no submodule has set_view, so there is no mode to show"
        set_ = [m for m in self.modules if m.mode in ("train", "eval", "mixed")]
        line = (
            f"{self.root_type}: {self.mode} ({len(set_)} of {len(self.modules)} modules with set_view "
            "are set to train or eval)"
        )
        if self.mode == "mixed":
            line += "; not like the rest: " + ", ".join(self.disagreeing)
        if self.unset and self.mode != "unset":
            line += f"; decided at call time: {', '.join(self.unset)}"
        return line

    def to_text(self) -> str:
        return render.view_text(self)

    def __repr__(self) -> str:
        return self.to_text()


def view_report(model: Any, *, only: Any = ...) -> ViewReport:
    """Every submodule instance with ``set_view`` (matched by ``only``), its arguments and current
    values, and the model's mode (train, eval or mixed).

    Args:
      model: an ``nnx.Module``.
      only: an NNX filter on ``(path, module)``, or a module path such as ``"layers[1]"``,
        ``"layers/1"`` or ``("layers", 1)``: that module and everything under it. A path or
        filter that matches nothing is not an error: the report says so.

    Raises:
      TypeError: ``model`` is not an ``nnx.Module``, or ``only`` is neither a filter nor a path.

    >>> from flax import nnx
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    >>> report = view_report(model)
    >>> report.mode
    'train'
    >>> print(report.to_text())
    Sequential: train (1 of 1 modules with set_view are set to train or eval)
      layers[1] (Dropout): train
        deterministic: bool | None = None   now False
    """
    if not isinstance(model, nnx.Module):
        raise TypeError(f"expected an nnx.Module, got {type(model).__name__}")
    predicate = filterlib.to_predicate(only_filter(model, only))
    modules = []
    found = [(tuple(path), module) for path, module in compat.iter_modules(model)]  # each module once
    shared = shared_prefixes(model, {path for path, _ in found})
    for path, module in found:
        if not predicate(path, module):
            continue
        if compat.set_view(module):
            views = _module_views(path, module)
        elif isinstance(training := _current(module, "training"), (bool, type(None))) and hasattr(module, "training"):
            views = _attribute_views(path, module, training)
        else:
            continue
        modules.append(dataclasses.replace(views, aliases=aliases_at(path, shared)))
    described = None if only is ... else (repr(only) if is_module_path(only) else filter_code(only) or UNNAMED)
    return ViewReport(type(model).__name__, tuple(modules), described)


def only_filter(model: Any, only: Any) -> Any:
    """``only`` as an NNX filter: a module path becomes a filter on the modules under it."""
    if only is ... or not is_module_path(only):
        return only
    roots = path_roots(model, only)
    return lambda path, node, roots=roots: any(tuple(path[: len(r)]) == r for r in roots)


def _module_views(path: Path, module: nnx.Module) -> ModuleViews:
    signature, params = set_view_params(compat.set_view(module))
    args = tuple(
        ViewArg(name, annotation, default, doc, _current(module, name), kind)
        for name, annotation, default, doc, kind in params
    )
    return ModuleViews(path, type(module).__name__, args, signature, type(module))


def _attribute_views(path: Path, module: nnx.Module, training: bool | None) -> ModuleViews:
    arg = ViewArg("training", "bool | None", None, _ATTRIBUTE_DOC, training, "tri_bool")
    return ModuleViews(path, type(module).__name__, (arg,), "training attribute", type(module), has_set_view=False)
