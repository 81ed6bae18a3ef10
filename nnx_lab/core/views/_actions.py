"""Acting on ``set_view`` options: which modules a request is for (:class:`Scope`, with the same
filter as Python text), browser values checked against each argument's annotation (never
``eval``: literals go through ``ast.literal_eval``), ``nnx.view(...)`` models, ``set_attributes``
in place and ``train()``/``eval()``, all or nothing, and the Python line that does the same.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import logging
import warnings
from typing import Any, Mapping

from flax import nnx
from flax.nnx import filterlib

from .. import compat
from ..graph import is_module_path, path_roots, path_text
from ..text import clip, one_line, safe_repr
from ._code import UNNAMED, class_code, filter_code, path_code, roots_code
from ._report import MODE_ARGS, ViewArg, ViewReport, only_filter, view_report
from ._signature import CHECKS, WANTED

_log = logging.getLogger("nnx_lab")


class ViewError(ValueError):
    """A request the model cannot take; the message is one line and the model is unchanged."""


@dataclasses.dataclass(frozen=True)
class Scope:
    """Which modules a request is for: all of them, one class, or one instance (by path).

    ``only`` is the NNX filter handed to flax; ``code`` the same filter as Python text (``None``
    for all modules), so the line shown to the user is the line that ran.
    """

    kind: str  # "all" | "class" | "path"
    only: Any = ...
    code: str | None = None
    label: str = "all modules"


def base_scope(
    model: nnx.Module, only: Any, namespace: Mapping[str, Any] | None = None, code: str | None = None
) -> Scope:
    """What "all modules" means for a panel made with ``only=`` (a filter or a module path), with
    its Python text: ``code`` when given (the text the user typed), else :func:`filter_code`'s,
    else :data:`UNNAMED`."""
    if only is ...:
        return Scope("all")
    if is_module_path(only):
        roots = path_roots(model, only)
        return Scope("all", only_filter(model, only), code or roots_code(roots), "the panel's modules")
    return Scope("all", only, code or filter_code(only, namespace) or UNNAMED, "the panel's modules")


def class_scope(cls: type, namespace: Mapping[str, Any] | None = None, base: Scope | None = None) -> Scope:
    """Every instance of ``cls`` among the modules of ``base`` (``nnx.All(base, cls)``)."""
    code = class_code(cls, namespace)
    only = cls if not code.startswith("lambda") else (lambda path, node, c=cls: type(node) is c)
    if base is not None and base.only is not ...:
        only, code = nnx.All(base.only, only), f"nnx.All({base.code}, {code})"
    return Scope("class", only, code, f"class {cls.__name__}")


def scope_for(
    report: ViewReport, spec: Any, namespace: Mapping[str, Any] | None = None, base: Scope | None = None
) -> Scope:
    """A :class:`Scope` from a browser request: ``None`` (all), ``{"class": name}`` or
    ``{"path": [...]}``. ``base`` is the scope "all" means (a panel made with ``only=``): a class
    scope is the class *within* it (``nnx.All(base, cls)``); a path is one the report lists."""
    base = base or Scope("all")
    if spec is None:
        return base
    if not isinstance(spec, Mapping) or len(spec) != 1 or not {"class", "path"} & set(spec):
        raise ViewError(f"a scope is None, {{'class': NAME}} or {{'path': [...]}}, not {spec!r}")
    if "class" in spec:
        classes = {m.cls for m in report.modules if m.class_name == spec["class"]}
        if len(classes) != 1:
            raise ViewError(
                f"no single class named {spec['class']!r} among the modules with set_view"
                if not classes
                else f"{len(classes)} different classes are named {spec['class']!r}"
            )
        return class_scope(classes.pop(), namespace, base)
    key = tuple(spec["path"]) if isinstance(spec["path"], (list, tuple)) else None
    if key is None or key not in {m.path for m in report.modules}:  # the report is within base
        raise ViewError(f"no module with set_view at path {spec['path']!r}")
    return Scope("path", lambda path, node, k=key: tuple(path) == k, path_code(key), path_text(key) or "(root)")


def coerce_values(
    model: nnx.Module, report: ViewReport, scope: Scope, values: Mapping[str, Any], *, from_text: bool = False
) -> dict[str, Any]:
    """Check ``values`` against the ``set_view`` arguments of the modules of ``model`` in ``scope``.

    Names no module in scope takes are a :class:`ViewError`; so are browser values (``from_text``)
    of a type the annotation does not allow (for annotations made of bool, int, float, str, None,
    tuple and list). A Python caller's value of another type is passed on, as ``nnx.view`` would,
    with a warning.
    With ``from_text`` (values typed in the browser), text for ``literal`` and ``int`` arguments
    is parsed with ``ast.literal_eval``: browser text is never evaluated.
    """
    in_scope = {path for path, _ in _scoped(model, scope)}
    args: dict[str, list[ViewArg]] = {}
    for m in report.modules:
        if m.path in in_scope:
            for a in m.args:
                args.setdefault(a.name, []).append(a)
    if not values:
        raise ViewError("choose at least one value to set")
    unknown = sorted(set(values) - set(args))
    if unknown:
        takes = ", ".join(sorted(args)) or "nothing"
        raise ViewError(
            f"no module in {scope.label} takes {', '.join(map(repr, unknown))} in set_view (they take: {takes})"
        )
    return {name: _coerce(name, args[name], value, from_text) for name, value in values.items()}


def _coerce(name: str, args: list[ViewArg], value: Any, from_text: bool) -> Any:
    kinds = {a.kind for a in args}
    if from_text and isinstance(value, str) and kinds & {"literal", "int"}:
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            if "literal" in kinds:
                raise ViewError(
                    f"{name}: {value!r} is not a Python literal (a number, string, tuple, True, None, ...)"
                ) from None
            raise ViewError(f"{name} takes {_wanted(args)}, not {value!r}") from None
    if from_text and "int" in kinds and isinstance(value, float) and value.is_integer():
        value = int(value)  # 3.0 from a JSON number
    allowed = [a.types for a in args if a.types is not None]
    if len(allowed) < len(args):  # an annotation too complex to check: set_view decides
        return value
    if not any(CHECKS[t](value) for types_ in allowed for t in types_):
        if from_text:  # the browser's controls: a value of the wrong kind is a slip
            raise ViewError(f"{name} takes {_wanted(args)}, not {type(value).__name__} {clip(safe_repr(value), 80)}")
        # A Python call passes what it passes, as nnx.view does (flax's own view guide gives
        # `msg: bool | None` a string): say so, and let set_view decide.
        warnings.warn(
            f"{name} takes {_wanted(args)} by its annotation; passing {type(value).__name__} "
            f"{clip(safe_repr(value), 80)} as given (nnx.view does not check annotations)",
            stacklevel=4,
        )
    return value


def _wanted(args: list[ViewArg]) -> str:
    types_ = set().union(*(a.types or () for a in args))
    words = [("True/False/None" if "None" in types_ else "True/False")] if "bool" in types_ else []
    words += [WANTED[t] for t in ("int", "float", "str", "tuple", "list") if t in types_]
    if "None" in types_ and "bool" not in types_:
        words.append("None")
    return " or ".join(words) or "a value"


def _scoped(model: nnx.Module, scope: Scope):
    predicate = filterlib.to_predicate(scope.only)
    return [(tuple(p), m) for p, m in compat.iter_modules(model) if predicate(p, m)]


def make_view(model: nnx.Module, scope: Scope, values: Mapping[str, Any]) -> nnx.Module:
    """``nnx.view(model, only=..., **values)``: a new model sharing the arrays; ``model`` unchanged."""
    if not compat.has("nnx.view"):
        raise ViewError(str(compat.NeedsNewerFlax("nnx.view", "nnx.view")))
    try:
        return nnx.view(model, only=scope.only, **values)
    except Exception as e:  # noqa: BLE001 - boundary: the user's values and modules; said in one line
        _log.debug("nnx_lab: nnx.view raised", exc_info=True)
        raise ViewError(f"nnx.view raised {one_line(e)}") from None


def apply_in_place(model: nnx.Module, scope: Scope, values: Mapping[str, Any]) -> None:
    """``model.set_attributes(only, **values)``, all or nothing.

    The values are first given to every ``set_view`` in scope through ``nnx.view`` (which works on
    a copy), so a combination a module rejects is refused before anything changes; then the
    attributes are set, and put back as they were if setting any of them fails.
    """
    make_view(model, scope, values)  # the modules' own validation, on a copy
    modules = _scoped(model, scope)
    missing = sorted(n for n in values if not any(hasattr(m, n) for _, m in modules))
    if missing:
        raise ViewError(
            f"{', '.join(map(repr, missing))} is a set_view option but no module in {scope.label} has "
            "such an attribute, so it cannot be set in place; create a view instead"
        )
    with _all_or_nothing([m for _, m in modules], values, "set_attributes"):
        if scope.kind == "all" and scope.only is ...:
            model.set_attributes(**values)
        else:
            model.set_attributes(scope.only, **values)


def set_mode(model: nnx.Module, mode: str, target: str = "model") -> str:
    """``model.train()`` or ``model.eval()``, all or nothing; returns that line as run."""
    if mode not in ("train", "eval"):
        raise ViewError(f"mode is 'train' or 'eval', not {mode!r}")
    if all(m.mode is None for m in view_report(model).modules):
        raise ViewError(
            f"{type(model).__name__}: no submodule has a train/eval argument "
            f"({', '.join(MODE_ARGS)}), so model.{mode}() would change nothing"
        )
    # Modules with a `training` attribute follow too (flax's train()/eval() pass extra attributes on)
    extra = {"training": mode == "train"} if any(not m.has_set_view for m in view_report(model).modules) else {}
    with _all_or_nothing([m for _, m in compat.iter_modules(model)], MODE_ARGS, f"model.{mode}()"):
        model.train(**extra) if mode == "train" else model.eval(**extra)
    return f"{target}.{mode}({_value_code(extra)})"


@contextlib.contextmanager
def _all_or_nothing(modules: list[Any], names: Any, what: str):
    """Put ``names`` back on ``modules`` as they were if the body fails (also on KeyboardInterrupt)."""
    before = []
    for m in modules:
        for n in names:
            try:
                before.append((m, n, getattr(m, n)))
            except Exception:  # noqa: BLE001 - boundary: absent, or a user's getter that raises: nothing to put back
                _log.debug("nnx_lab: %s.%s not read", type(m).__name__, n, exc_info=True)
    try:
        yield
    except BaseException as e:  # all or nothing (Ctrl-C included): put back, then re-raised or said
        _log.debug("nnx_lab: %s failed; attributes put back", what, exc_info=True)
        for m, n, old in before:
            setattr(m, n, old)
        if isinstance(e, Exception):
            raise ViewError(f"{what} raised {one_line(e)}; nothing changed") from None
        raise


def _value_code(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def view_code(target: str, name: str, scope: Scope, values: Mapping[str, Any]) -> str:
    only = f"only={scope.code}, " if scope.code else ""
    return f"{name} = nnx.view({target}, {only}{_value_code(values)})"


def apply_code(target: str, scope: Scope, values: Mapping[str, Any]) -> str:
    only = f"{scope.code}, " if scope.code else ""
    return f"{target}.set_attributes({only}{_value_code(values)})"
