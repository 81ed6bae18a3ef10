"""What the next captured call collects: the capture panel's toggles, without any UI.

:class:`CaptureToggles` holds the Variable types offered and ticked, the method-outputs switch and
the unticked submodules; it validates every change (from Python or from a browser message) and
turns the toggles into the keyword arguments of :class:`nnx_lab.core.capture.Capture`. A change
that is refused raises ValueError/TypeError and leaves the toggles as they were.
"""

from __future__ import annotations

from typing import Any, Iterable

from flax import nnx

from ..graph import Path, module_paths_text, path_text
from ..text import json_key, one_line

#: Types every panel offers, ticked or not: what ``sow`` and ``perturb`` store by default.
BUILTIN_TYPES = (nnx.Intermediate, nnx.Perturbation)

#: The browser messages a panel answers (their ``type``).
MESSAGES = ("type", "methods", "module", "modules")

Modules = list[tuple[Path, str]]  # (path, class name) of every module, parents first


class CaptureToggles:
    """Types to collect, method outputs on or off, and the submodules whose values are captured.

    ``modules`` arguments are what :func:`module_tree` returns for the model now: submodules added
    to the model later start ticked.
    """

    def __init__(self, types: Iterable[type[nnx.Variable]], methods: bool = False):
        chosen = tuple(types)
        if not chosen:
            raise ValueError("capture needs at least one Variable type to collect")
        check_bool("methods", methods)
        self._types: dict[str, type[nnx.Variable]] = {}  # key shown in the browser -> type, display order
        for t in BUILTIN_TYPES:
            self.offer(t)
        self._on = {self.offer(t) for t in chosen}
        self.methods = methods
        self._off: set[Path] = set()

    # -- reading ---------------------------------------------------------------------------
    @property
    def types(self) -> tuple[type[nnx.Variable], ...]:
        """The ticked Variable types, in display order."""
        return tuple(t for key, t in self._types.items() if key in self._on)

    def type_names(self) -> list[str]:
        return [key for key in self._types if key in self._on]

    def ticked(self, modules: Modules) -> list[Path]:
        return [p for p, _ in modules if p not in self._off]

    def state(self) -> tuple:
        """A value that changes whenever a toggle does (to tell "changed since the last call")."""
        return (tuple(sorted(self._on)), self.methods, tuple(sorted(map(path_text, self._off))))

    def options(self, modules: Modules) -> dict[str, Any]:
        """``types``, ``methods`` and, when some submodule is unticked, ``only`` for ``Capture``."""
        types = self.types
        if not types:
            raise ValueError("no Variable type is ticked in the capture panel")
        on = self.ticked(modules)
        if not on:
            raise ValueError("no submodule is ticked in the capture panel: tick one (or click 'all')")
        options: dict[str, Any] = {"types": types, "methods": self.methods}
        if len(on) < len(modules):
            options["only"] = Ticked(on)
        return options

    def to_dict(self, modules: Modules) -> dict[str, object]:
        """The toggles as the browser draws them (JSON)."""
        index = {p: i for i, (p, _) in enumerate(modules)}
        return {
            "types": [{"name": key, "on": key in self._on, "title": qualname(t)} for key, t in self._types.items()],
            "methods": self.methods,
            "modules": [
                {
                    "path": path_text(p),
                    "key": json_key(p[-1]) if p else "",
                    "parent": index.get(p[:-1], -1) if p else -1,
                    "cls": cls,
                    "on": p not in self._off,
                }
                for p, cls in modules
            ],
        }

    # -- changing ----------------------------------------------------------------------------
    def offer(self, t: type) -> str:
        """Offer ``t`` (unticked unless it already is); returns its key."""
        for key, known in self._types.items():
            if known is t:
                return key
        key = t.__name__ if t.__name__ not in self._types else qualname(t)
        self._types[key] = t
        return key

    def set_types(self, chosen: Iterable[type[nnx.Variable]]) -> None:
        chosen = tuple(chosen)
        if not chosen:
            raise ValueError("keep at least one Variable type to collect")
        self._on = {self.offer(t) for t in chosen}

    @property
    def methods(self) -> bool:
        return self._methods

    @methods.setter
    def methods(self, value: bool) -> None:
        check_bool("methods", value)
        self._methods = value

    def select(self, paths: str | tuple | Iterable[str | tuple | list], modules: Modules) -> None:
        """Tick exactly the modules at ``paths`` and everything under them (paths as text such as
        ``"blocks[1]"`` or ``"blocks/1"``, or key tuples; ``""`` is the model itself)."""
        if isinstance(paths, (str, tuple)):
            paths = [paths]
        known: dict[object, Path] = {}
        for p, _ in modules:
            known[p] = p
            for text in module_paths_text(p):
                known.setdefault(text, p)
        known[""] = ()
        chosen, unknown = [], []
        for p in paths:
            key = tuple(p) if isinstance(p, list) else p.strip() if isinstance(p, str) else p
            if key in known:
                chosen.append(known[key])
            else:
                unknown.append(p)
        if unknown:
            raise ValueError(
                f"no submodule at {', '.join(repr(u) for u in unknown)}; the model's submodules are: {_listing(known)}"
            )
        ticked = {p for p, _ in modules if any(p[: len(c)] == c for c in chosen)}
        self._off = {p for p, _ in modules if p not in ticked}

    def apply_message(self, content: object, modules: Modules) -> None:
        """One browser toggle (``{"type": "type"|"methods"|"module"|"modules", "on": bool, ...}``)."""
        if not isinstance(content, dict) or content.get("type") not in MESSAGES:
            raise ValueError(f"unknown message from the panel: {one_line(content)}")
        kind, on = content["type"], content.get("on")
        if not isinstance(on, bool):
            raise ValueError(f"toggle {kind!r}: 'on' must be true or false, not {on!r}")
        if kind == "methods":
            self.methods = on
        elif kind == "type":
            name = content.get("name")
            if name not in self._types:
                raise ValueError(f"unknown Variable type {name!r}; the panel offers {', '.join(self._types)}")
            if not on and self._on == {name}:
                raise ValueError(f"keep at least one Variable type to collect ({name} is the last one)")
            (self._on.add if on else self._on.discard)(name)
        elif kind == "modules":
            self._off = set() if on else {p for p, _ in modules}
        else:
            path = content.get("path")
            paths = {path_text(p): p for p, _ in modules}
            if not isinstance(path, str) or path not in paths:
                raise ValueError(f"no submodule at {path!r}")
            below = paths[path]
            subtree = {p for p in paths.values() if p[: len(below)] == below}
            self._off = self._off - subtree if on else self._off | subtree


def module_tree(model: nnx.Module) -> Modules:
    """(path, class name) of every module of ``model``, parents first, children in flax's key order."""
    found = [(p, type(m).__name__) for p, m in nnx.iter_modules(model)]  # post-order: children first
    children: dict[Path, list[Path]] = {}
    cls: dict[Path, str] = dict(found)
    for p, _ in found:
        if p:
            parent = p[:-1]
            while parent not in cls and parent:  # a module under a plain container (nnx.List)
                parent = parent[:-1]
            children.setdefault(parent, []).append(p)
    out: Modules = []
    stack: list[Path] = [()]
    while stack:
        p = stack.pop()
        out.append((p, cls[p]))
        stack.extend(reversed(children.get(p, [])))
    return out


class Ticked:
    """``only=`` for the core: an NNX filter on ``(path, module)`` taking exactly the ticked modules
    (each on its own: a ticked module under an unticked one is still captured)."""

    def __init__(self, paths: Iterable[Path]):
        self.paths = frozenset(tuple(p) for p in paths)

    def __call__(self, path: Iterable, module: object) -> bool:
        return tuple(path) in self.paths

    def __repr__(self) -> str:
        return f"ticked modules {sorted(map(path_text, self.paths))}"


def check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")


def qualname(t: type) -> str:
    module = getattr(t, "__module__", "") or ""
    if module.startswith("flax.nnx"):
        module = "nnx"
    return f"{module}.{t.__qualname__}" if module and module != "builtins" else t.__qualname__


def _listing(known: dict) -> str:
    names = sorted({path_text(p) or "''" for p in known.values()})
    return ", ".join(names[:12]) + (f" (+{len(names) - 12} more)" if len(names) > 12 else "")
