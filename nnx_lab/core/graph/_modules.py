"""Module paths and module selection: the ways a user writes a module path, and ``only=`` (an NNX
filter on ``(path, module)``, or a module path meaning that module and everything under it) told
apart and applied the same way by captures, view reports and the magics.

>>> from flax import nnx
>>> linear, dropout = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5)
>>> modules = [(("layers", 0), linear), (("layers", 1), dropout), (("layers", 1, "inner"), dropout)]
>>> select_modules(modules, selector("layers/1")), select_modules(modules, selector(nnx.Linear))
([False, True, True], [True, False, False])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from flax.nnx import filterlib

from .. import compat
from ..text import a_kind, first_line, one_line, safe_repr
from ._paths import Path, path_text

if TYPE_CHECKING:
    from flax import nnx


def module_paths_text(path: Path) -> set[str]:
    """The ways a user may write a module path: ``blocks[0].attn``, ``blocks/0/attn``, ``blocks.0.attn``.

    >>> sorted(module_paths_text(("blocks", 0, "attn")))
    ['blocks.0.attn', 'blocks/0/attn', 'blocks[0].attn']
    """
    return {path_text(path), "/".join(map(str, path)), ".".join(map(str, path))}


class PathSelector:
    """A module path (text or key tuple): that module and everything under it.

    >>> PathSelector("blocks[0]").root_of(("blocks", 0)), PathSelector(("blocks", 0)).root_of(("blocks",))
    (True, False)
    """

    def __init__(self, only: str | tuple):
        self.only = only
        self.text = only.strip() if isinstance(only, str) else None

    def root_of(self, path: Path) -> bool:
        """Whether ``path`` is the module this path names (the root of what it selects)."""
        if self.text is None:
            return tuple(path) == tuple(self.only)
        return self.text in module_paths_text(path) or (not path and self.text in ("", "."))


class OnlyError(TypeError, ValueError):
    """``only`` is a filter that raised, or answered other than True/False, on a module.
    ``detail`` is the message without the filter's repr (the magic names it as the user wrote it)."""

    def __init__(self, only: Any, detail: str):
        super().__init__(f"only={_short_repr(only)} {detail}")
        self.detail = detail


def _short_repr(obj: object) -> str:
    return first_line(safe_repr(obj), 80)


def selector(only: Any) -> PathSelector | Callable[[Path, nnx.Module], bool]:
    """``only`` made ready to select modules: a :class:`PathSelector` for a module path (text, or
    a tuple of str/int keys), else a predicate on ``(path, module)`` (everything for ``...``,
    ``None`` and ``True``); TypeError when it is neither a filter nor a path. The predicate raises
    :class:`OnlyError` when the filter raises or answers other than True/False.

    >>> isinstance(selector("blocks[0]"), PathSelector), selector(...)((), None)
    (True, True)
    >>> selector(3.5)
    Traceback (most recent call last):
    TypeError: only=3.5 is not an NNX filter or a module path
    """
    if only is ... or only is None or only is True:
        return lambda path, module: True
    if isinstance(only, str) or (isinstance(only, tuple) and only and all(isinstance(k, (str, int)) for k in only)):
        return PathSelector(only)
    try:
        predicate = filterlib.to_predicate(only)
    except (TypeError, ValueError):
        raise TypeError(f"only={_short_repr(only)} is not an NNX filter or a module path") from None

    def select(path, module):
        where = path_text(path) or "(the model)"
        try:
            answer = predicate(path, module)
        except Exception as e:
            raise OnlyError(only, f"raised {one_line(e)} on the module at {where}") from None
        if not isinstance(answer, (bool, np.bool_)):
            raise OnlyError(
                only, f"returned {a_kind(type(answer).__name__)} for the module at {where}, not True or False"
            )
        return bool(answer)

    return select


def select_modules(
    modules: list[tuple[Path, nnx.Module]], chosen: PathSelector | Callable[[Path, nnx.Module], bool]
) -> list[bool]:
    """Which of ``modules`` (``(path, module)`` pairs, as ``nnx.iter_modules`` gives them) the
    :func:`selector` ``chosen`` selects."""
    if isinstance(chosen, PathSelector):
        roots = [tuple(path) for path, _ in modules if chosen.root_of(path)]
        return [any(tuple(path[: len(r)]) == r for r in roots) for path, _ in modules]
    return [chosen(path, module) for path, module in modules]


def is_module_path(only: Any) -> bool:
    """Whether ``only`` is a module path (text or a key tuple) rather than an NNX filter, the way
    ``Capture(only=...)`` tells them apart; TypeError when it is neither.

    >>> is_module_path("layers[1]"), is_module_path(("layers", 1)), is_module_path(len)
    (True, True, False)
    """
    return isinstance(selector(only), PathSelector)


def path_roots(model: Any, only: str | tuple) -> tuple[Path, ...]:
    """The paths of the modules of ``model`` that the module path ``only`` names (usually one)."""
    chosen = PathSelector(only)
    return tuple(tuple(p) for p, _ in compat.iter_modules(model) if chosen.root_of(tuple(p)))
