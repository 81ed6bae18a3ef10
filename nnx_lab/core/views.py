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
import inspect
from typing import Any

from flax import nnx
from flax.nnx import filterlib

from .tree import Path, path_text

#: set_view arguments that mean train (False) or eval (True).
MODE_ARGS = ("deterministic", "use_running_average")
_MISSING = object()


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


@dataclasses.dataclass(frozen=True)
class ModuleViews:
    path: Path
    class_name: str
    args: tuple[ViewArg, ...]
    signature: str  # set_view's signature: what view_info shows without a docstring

    @property
    def path_text(self) -> str:
        return path_text(self.path) or "(root)"

    @property
    def mode(self) -> str | None:
        """'train', 'eval', 'unset' (decided at call time) or None (no mode argument)."""
        values = {a.current for a in self.args if a.name in MODE_ARGS and a.has_current}
        if not values:
            return None
        if values == {True}:
            return "eval"
        if values == {False}:
            return "train"
        if values == {None}:
            return "unset"
        return "mixed"


@dataclasses.dataclass(frozen=True)
class ViewReport:
    root_type: str
    modules: tuple[ModuleViews, ...]

    @property
    def mode(self) -> str:
        """'train', 'eval', 'mixed', 'unset' or 'none' (no submodule has a mode)."""
        modes = {m.mode for m in self.modules if m.mode is not None}
        if not modes:
            return "none"
        return modes.pop() if len(modes) == 1 else "mixed"

    @property
    def disagreeing(self) -> tuple[str, ...]:
        """When mixed: the paths whose mode is not the most common one."""
        modes = [m.mode for m in self.modules if m.mode is not None]
        if len(set(modes)) <= 1:
            return ()
        common = max(dict.fromkeys(modes), key=modes.count)  # ties: the mode seen first
        return tuple(m.path_text for m in self.modules if m.mode not in (None, common))

    def summary(self) -> str:
        if not self.modules:
            return f"{self.root_type}: no submodule has set_view, so there is no mode to show"
        with_mode = [m for m in self.modules if m.mode is not None]
        line = f"{self.root_type}: {self.mode} ({len(with_mode)} of {len(self.modules)} modules with set_view have a mode)"
        if self.mode == "mixed":
            line += "; not like the rest: " + ", ".join(self.disagreeing)
        return line

    def to_text(self) -> str:
        lines = [self.summary()]
        for m in self.modules:
            lines.append(f"  {m.path_text} ({m.class_name}){f': {m.mode}' if m.mode else ''}")
            for a in m.args:
                now = repr(a.current) if a.has_current else "—"
                lines.append(f"    {a.name}: {a.annotation} = {a.default!r}   now {now}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text()


def view_report(model: Any, *, only: Any = ...) -> ViewReport:
    """Every submodule instance with ``set_view`` (matched by ``only``, an NNX filter on
    ``(path, module)``), its arguments and current values, and the model's mode."""
    if not isinstance(model, nnx.Module):
        raise TypeError(f"expected an nnx.Module, got {type(model).__name__}")
    predicate = filterlib.to_predicate(only)
    modules = []
    for path, module in nnx.iter_modules(model):
        if hasattr(module, "set_view") and predicate(path, module):
            modules.append(_module_views(tuple(path), module))
    return ViewReport(type(model).__name__, tuple(modules))


def _module_views(path: Path, module: nnx.Module) -> ModuleViews:
    method = type(module).set_view
    signature = inspect.signature(method)
    docs = _arg_docs(method)
    args = []
    for name, param in signature.parameters.items():
        if name in ("self", "args", "kwargs") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = "" if param.annotation is param.empty else _annotation_text(param.annotation)
        default = None if param.default is param.empty else param.default
        args.append(ViewArg(name, annotation, default, docs.get(name, ""),
                            getattr(module, name, _MISSING), _kind(annotation)))
    return ModuleViews(path, type(module).__name__, tuple(args), f"set_view{signature}")


def _arg_docs(method: Any) -> dict[str, str]:
    """The `Args:` section of a set_view docstring, parsed the way nnx.view_info parses it."""
    from flax.nnx.module import _parse_docstring_args  # view_info's own parser

    doc = inspect.getdoc(method)
    if not isinstance(doc, str) or "Args:\n" not in doc:
        return {}
    start, end = doc.find("Args:\n"), doc.find("Returns:\n")
    section = doc[start + 6: end if end != -1 else len(doc)]
    try:
        return {k: " ".join(v.split()) for k, v in _parse_docstring_args(section).items()}
    except Exception:  # a docstring flax's parser cannot read: fall back to no help text
        return {}


def _annotation_text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))


def _kind(annotation: str) -> str:
    parts = {p.strip() for p in annotation.replace("Optional[", "").rstrip("]").split("|")}
    if parts == {"bool", "None"}:
        return "tri_bool"
    if parts == {"bool"}:
        return "bool"
    if parts <= {"int", "None"} and "int" in parts:
        return "int"
    return "literal"
