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

import ast
import contextlib
import dataclasses
import functools
import inspect
import types
import typing
from typing import Any, Callable, Mapping

from flax import nnx
from flax.nnx import filterlib

from .capture_arming import _PathSelector, _selector
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

    @property
    def types(self) -> frozenset[str] | None:
        """The simple types the annotation allows (``{'int', 'None'}``), or None when it names
        anything else (then any value is passed on to ``set_view`` unchecked)."""
        return _simple_types(self.annotation)


@dataclasses.dataclass(frozen=True)
class ModuleViews:
    path: Path
    class_name: str
    args: tuple[ViewArg, ...]
    signature: str  # set_view's signature: what view_info shows without a docstring
    cls: type = dataclasses.field(default=object, compare=False, repr=False)

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

    def summary(self) -> str:
        if not self.modules:
            if self.only is not None:
                return f"{self.root_type}: only={self.only} matched no module with set_view"
            return f"{self.root_type}: no submodule has set_view, so there is no mode to show"
        set_ = [m for m in self.modules if m.mode in ("train", "eval", "mixed")]
        line = (f"{self.root_type}: {self.mode} ({len(set_)} of {len(self.modules)} modules with set_view "
                "are set to train or eval)")
        if self.mode == "mixed":
            line += "; not like the rest: " + ", ".join(self.disagreeing)
        if self.unset and self.mode != "unset":
            line += f"; decided at call time: {', '.join(self.unset)}"
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
    """Every submodule instance with ``set_view`` (matched by ``only``: an NNX filter on
    ``(path, module)``, or a module path such as ``"layers[1]"``, ``"layers/1"`` or
    ``("layers", 1)``: that module and everything under it), its arguments and current values,
    and the model's mode."""
    if not isinstance(model, nnx.Module):
        raise TypeError(f"expected an nnx.Module, got {type(model).__name__}")
    predicate = filterlib.to_predicate(only_filter(model, only))
    modules = []
    for path, module in nnx.iter_modules(model):
        if hasattr(module, "set_view") and predicate(path, module):
            modules.append(_module_views(tuple(path), module))
    described = None if only is ... else (repr(only) if is_module_path(only) else filter_code(only) or UNNAMED)
    return ViewReport(type(model).__name__, tuple(modules), described)


def is_module_path(only: Any) -> bool:
    """A module path (text or a key tuple), the way ``Capture(only=...)`` tells one from a filter."""
    return isinstance(_selector(only), _PathSelector)  # TypeError: neither a filter nor a path


def _path_roots(model: Any, only: Any) -> tuple[Path, ...]:
    """The paths of the modules that the module path ``only`` names (usually one)."""
    selector = _PathSelector(only)
    return tuple(tuple(p) for p, _ in nnx.iter_modules(model) if selector.root_of(tuple(p)))


def only_filter(model: Any, only: Any) -> Any:
    """``only`` as an NNX filter: a module path becomes a filter on the modules under it."""
    if only is ... or not is_module_path(only):
        return only
    roots = _path_roots(model, only)
    return lambda path, node, roots=roots: any(tuple(path[:len(r)]) == r for r in roots)


def _roots_code(roots: tuple[Path, ...]) -> str:
    if len(roots) == 1:
        return f"lambda path, node: path[:{len(roots[0])}] == {roots[0]!r}"
    return f"lambda path, node: any(path[:len(r)] == r for r in {roots!r})"


def _module_views(path: Path, module: nnx.Module) -> ModuleViews:
    signature, params = _set_view_params(type(module).set_view)
    args = tuple(ViewArg(name, annotation, default, doc, getattr(module, name, _MISSING), kind)
                 for name, annotation, default, doc, kind in params)
    return ModuleViews(path, type(module).__name__, args, signature, type(module))


@functools.lru_cache(maxsize=512)
def _set_view_params(method: Any) -> tuple[str, tuple[tuple[str, str, Any, str, str], ...]]:
    """Per ``set_view`` function (so per class, not per instance): its signature text and
    (name, annotation, default, doc, kind) of each argument."""
    signature = inspect.signature(method)
    docs = _arg_docs(method)
    params = []
    for name, param in signature.parameters.items():
        if name in ("self", "args", "kwargs") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = "" if param.annotation is param.empty else _annotation_text(param.annotation)
        default = None if param.default is param.empty else param.default
        params.append((name, annotation, default, docs.get(name, ""), _kind(annotation)))
    return f"set_view{signature}", tuple(params)


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
    """An annotation as text, with unions written ``A | B | None`` whether they were written
    ``Optional[A]``, ``typing.Union[A, None]`` or ``A | None``, at run time or as a string."""
    return " | ".join(dict.fromkeys(_union_parts(annotation)))


def _union_parts(annotation: Any) -> list[str]:
    if isinstance(annotation, str):
        try:
            return _text_parts(ast.parse(annotation.strip(), mode="eval").body)
        except SyntaxError:
            return [annotation.strip()]
    if annotation is None or annotation is type(None):
        return ["None"]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [part for arg in typing.get_args(annotation) for part in _union_parts(arg)]
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return [annotation.__name__]
    return [repr(annotation).replace("typing.", "")]


def _text_parts(node: ast.expr) -> list[str]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _text_parts(node.left) + _text_parts(node.right)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional" and len(args) == 1:
            return _text_parts(args[0]) + ["None"]
        if head == "Union":
            return [part for arg in args for part in _text_parts(arg)]
    if isinstance(node, ast.Constant) and node.value is None:
        return ["None"]
    return [ast.unparse(node)]


#: Annotations whose values are checked; a union with anything else is passed on unchecked.
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),  # an int is a float here
    "str": lambda v: isinstance(v, str),
    "None": lambda v: v is None,
    "tuple": lambda v: isinstance(v, tuple),
    "list": lambda v: isinstance(v, list),
}
_WANTED = {"int": "an int", "float": "a float", "str": "a str", "tuple": "a tuple", "list": "a list"}


@functools.lru_cache(maxsize=512)
def _simple_types(annotation: str) -> frozenset[str] | None:
    parts = set()
    for part in annotation.split(" | ") if annotation else ():
        head = part.split("[", 1)[0].strip()  # tuple[int, int] is a tuple
        head = {"Tuple": "tuple", "List": "list", "NoneType": "None"}.get(head, head)
        if head not in _CHECKS:
            return None
        parts.add(head)
    return frozenset(parts) or None


def _kind(annotation: str) -> str:
    parts = _simple_types(annotation) or frozenset()
    if parts == {"bool", "None"}:
        return "tri_bool"
    if parts == {"bool"}:
        return "bool"
    if parts in ({"int"}, {"int", "None"}):
        return "int"
    return "literal"


# -- acting on the options: nnx.view(...) models, set_attributes in place, train/eval --------------

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

    def predicate(self) -> Callable[[Any, Any], bool]:
        return filterlib.to_predicate(self.only)


#: What the line shows for a filter that has no Python text (a function not bound to any name).
UNNAMED = "<your filter>"


def class_code(cls: type, namespace: Mapping[str, Any] | None = None) -> str:
    """Python text naming ``cls``: ``nnx.Dropout``, a user class bound under its own name, or an
    exact-type test when neither reaches it."""
    name = cls.__name__
    if getattr(nnx, name, None) is cls:
        return f"nnx.{name}"
    if namespace is not None and namespace.get(name) is cls:
        return name
    return f"lambda path, node: type(node).__name__ == {name!r}"


def filter_code(only: Any, namespace: Mapping[str, Any] | None = None) -> str | None:
    """An NNX filter as Python text that builds it (``nnx.All(nnx.Dropout, nnx.PathContains('enc'))``),
    a name of the namespace bound to it, or None when it has neither (a lambda made in place)."""
    if isinstance(only, type):
        return class_code(only, namespace)
    if only is True or only is False:
        return repr(only)
    if isinstance(only, (tuple, list)):
        parts = [filter_code(f, namespace) for f in only]
        if None not in parts:
            return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    elif isinstance(only, filterlib.OfType):
        return filter_code(only.type, namespace)
    elif isinstance(only, nnx.PathContains):
        return f"nnx.PathContains({only.key!r}, exact={only.exact!r})"
    elif isinstance(only, nnx.WithTag):
        return f"nnx.WithTag({only.tag!r})"
    elif isinstance(only, (nnx.Everything, nnx.Nothing)):
        return f"nnx.{type(only).__name__}()"
    elif isinstance(only, (nnx.All, nnx.Any, nnx.Not)):
        inner = only.predicates if isinstance(only, (nnx.All, nnx.Any)) else (only.predicate,)
        parts = [filter_code(f, namespace) for f in inner]
        if None not in parts:
            return f"nnx.{type(only).__name__}({', '.join(parts)})"
    if namespace is not None:
        return next((k for k, v in namespace.items() if v is only and not k.startswith("_")), None)
    return None


def path_code(path: Path) -> str:
    return f"lambda path, node: path == {tuple(path)!r}"


def base_scope(model: nnx.Module, only: Any, namespace: Mapping[str, Any] | None = None,
               code: str | None = None) -> Scope:
    """What "all modules" means for a panel made with ``only=`` (a filter or a module path), with
    its Python text: ``code`` when given (the text the user typed), else :func:`filter_code`'s,
    else :data:`UNNAMED`."""
    if only is ...:
        return Scope("all")
    if is_module_path(only):
        roots = _path_roots(model, only)
        return Scope("all", only_filter(model, only), code or _roots_code(roots), "the panel's modules")
    return Scope("all", only, code or filter_code(only, namespace) or UNNAMED, "the panel's modules")


def class_scope(cls: type, namespace: Mapping[str, Any] | None = None, base: Scope | None = None) -> Scope:
    """Every instance of ``cls`` among the modules of ``base`` (``nnx.All(base, cls)``)."""
    code = class_code(cls, namespace)
    only = cls if not code.startswith("lambda") else (lambda path, node, c=cls: type(node) is c)
    if base is not None and base.only is not ...:
        only, code = nnx.All(base.only, only), f"nnx.All({base.code}, {code})"
    return Scope("class", only, code, f"class {cls.__name__}")


def scope_for(report: ViewReport, spec: Any, namespace: Mapping[str, Any] | None = None,
              base: Scope | None = None) -> Scope:
    """A :class:`Scope` from a browser request: ``None`` (all), ``{"class": name}`` or
    ``{"path": [...]}``. ``base`` is the scope "all" means (a panel made with ``only=``): a class
    scope is the class *within* it (``nnx.All(base, cls)``); a path is one the report lists."""
    base = base or Scope("all")
    if spec is None:
        return base
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise ViewError(f"a scope is None, {{'class': NAME}} or {{'path': [...]}}, not {spec!r}")
    if "class" in spec:
        classes = {m.cls for m in report.modules if m.class_name == spec["class"]}
        if len(classes) != 1:
            raise ViewError(f"no single class named {spec['class']!r} among the modules with set_view"
                            if not classes else f"{len(classes)} different classes are named {spec['class']!r}")
        return class_scope(classes.pop(), namespace, base)
    if "path" in spec:
        key = tuple(spec["path"]) if isinstance(spec["path"], (list, tuple)) else None
        if key is None or key not in {m.path for m in report.modules}:  # the report is within base
            raise ViewError(f"no module with set_view at path {spec['path']!r}")
        return Scope("path", lambda path, node, k=key: tuple(path) == k, path_code(key),
                     path_text(key) or "(root)")
    raise ViewError(f"a scope is None, {{'class': NAME}} or {{'path': [...]}}, not {spec!r}")


def coerce_values(model: nnx.Module, report: ViewReport, scope: Scope, values: Mapping[str, Any], *,
                  from_text: bool = False) -> dict[str, Any]:
    """Check ``values`` against the ``set_view`` arguments of the modules of ``model`` in ``scope``.

    Names no module in scope takes, and values of a type the annotation does not allow (for
    annotations made of bool, int, float, str, None, tuple and list), are a :class:`ViewError`.
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
        raise ViewError(f"no module in {scope.label} takes {', '.join(map(repr, unknown))} in set_view "
                        f"(they take: {takes})")
    return {name: _coerce(name, args[name], value, from_text) for name, value in values.items()}


def _coerce(name: str, args: list[ViewArg], value: Any, from_text: bool) -> Any:
    kinds = {a.kind for a in args}
    if from_text and isinstance(value, str) and kinds & {"literal", "int"}:
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            if "literal" in kinds:
                raise ViewError(f"{name}: {value!r} is not a Python literal (a number, string, tuple, True, "
                                "None, ...)") from None
            raise ViewError(f"{name} takes {_wanted(args)}, not {value!r}") from None
    if from_text and "int" in kinds and isinstance(value, float) and value.is_integer():
        value = int(value)  # 3.0 from a JSON number
    allowed = [a.types for a in args]
    if None in allowed:  # an annotation too complex to check: set_view decides
        return value
    if not any(_CHECKS[t](value) for types_ in allowed for t in types_):
        raise ViewError(f"{name} takes {_wanted(args)}, not {type(value).__name__} {value!r}")
    return value


def _wanted(args: list[ViewArg]) -> str:
    types_ = set().union(*(a.types or () for a in args))
    words = [("True/False/None" if "None" in types_ else "True/False")] if "bool" in types_ else []
    words += [_WANTED[t] for t in ("int", "float", "str", "tuple", "list") if t in types_]
    if "None" in types_ and "bool" not in types_:
        words.append("None")
    return " or ".join(words) or "a value"


def _scoped(model: nnx.Module, scope: Scope):
    predicate = scope.predicate()
    return [(tuple(p), m) for p, m in nnx.iter_modules(model) if predicate(p, m)]


def make_view(model: nnx.Module, scope: Scope, values: Mapping[str, Any]) -> nnx.Module:
    """``nnx.view(model, only=..., **values)``: a new model sharing the arrays; ``model`` unchanged."""
    try:
        return nnx.view(model, only=scope.only, **values)
    except Exception as e:
        raise ViewError(f"nnx.view raised {type(e).__name__}: {_one_line(e)}") from None


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
        raise ViewError(f"{', '.join(map(repr, missing))} is a set_view option but no module in {scope.label} has "
                        "such an attribute, so it cannot be set in place; create a view instead")
    with _all_or_nothing([m for _, m in modules], values, "set_attributes"):
        if scope.kind == "all" and scope.only is ...:
            model.set_attributes(**values)
        else:
            model.set_attributes(scope.only, **values)


def set_mode(model: nnx.Module, mode: str) -> None:
    """``model.train()`` or ``model.eval()``, all or nothing."""
    if mode not in ("train", "eval"):
        raise ViewError(f"mode is 'train' or 'eval', not {mode!r}")
    if all(m.mode is None for m in view_report(model).modules):
        raise ViewError(f"{type(model).__name__}: no submodule has a train/eval argument "
                        f"({', '.join(MODE_ARGS)}), so model.{mode}() would change nothing")
    with _all_or_nothing([m for _, m in nnx.iter_modules(model)], MODE_ARGS, f"model.{mode}()"):
        model.train() if mode == "train" else model.eval()


@contextlib.contextmanager
def _all_or_nothing(modules: list[Any], names: Any, what: str):
    """Put ``names`` back on ``modules`` as they were if the body fails (also on KeyboardInterrupt)."""
    before = [(m, n, getattr(m, n)) for m in modules for n in names if hasattr(m, n)]
    try:
        yield
    except BaseException as e:
        for m, n, old in before:
            setattr(m, n, old)
        if isinstance(e, Exception):
            raise ViewError(f"{what} raised {type(e).__name__}: {_one_line(e)}; nothing changed") from None
        raise


def _value_code(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def view_code(target: str, name: str, scope: Scope, values: Mapping[str, Any]) -> str:
    only = f"only={scope.code}, " if scope.code else ""
    return f"{name} = nnx.view({target}, {only}{_value_code(values)})"


def apply_code(target: str, scope: Scope, values: Mapping[str, Any]) -> str:
    only = f"{scope.code}, " if scope.code else ""
    return f"{target}.set_attributes({only}{_value_code(values)})"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 300 else text[:297] + "..."
