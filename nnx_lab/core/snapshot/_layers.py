"""Stacked layers: a Variable with a layer axis (``nnx.vmap``/``nnx.scan`` over blocks) as a row over
all layers plus one child row per layer (``layer_of``, ``layer``), their statistics from the kernels
mapped over the layer axis (``core.stats._layered``). The axis comes from flax's metadata (an entry of
:data:`LAYER_NAMES` among a Variable's sharding names) or the user's ``layers={"blocks": 0}``, which
wins; never from a shape (docs/guide/layers.md).

>>> import jax.numpy as jnp
>>> from flax import nnx
>>> import nnx_lab
>>> class Stack(nnx.Module):
...     def __init__(self):
...         self.w = nnx.Param(jnp.arange(6.0).reshape(3, 2))
>>> snap = nnx_lab.snapshot(Stack(), layers={"w": 0})
>>> [(r.path_text, r.layer, r.stats["mean"]) for r in snap.rows]
[('w', None, 2.5), ('w[layer 0]', 0, 0.5), ('w[layer 1]', 1, 2.5), ('w[layer 2]', 2, 4.5)]
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from ..checks import as_number
from ..graph import path_text
from ..text import quote_repr
from ._describe import LAYER_NAMES, metadata_axis
from ._structure import Structure, describe

if TYPE_CHECKING:
    from ..graph import Path
    from ._describe import Row
    from ._structure import Described

__all__ = [
    "LAYER_NAMES",
    "LayerError",
    "LayerKey",
    "check_layers",
    "declared_axes",
    "expand",
    "metadata_axis",
    "parse_layer_option",
    "parse_layers",
    "stacked_modules",
]


class _PathShape(Protocol):
    """A row as layers are declared on it: a snapshot's :class:`Row` or a comparison's."""

    @property
    def path(self) -> Path: ...

    @property
    def shape(self) -> tuple[int, ...] | None: ...


class LayerError(ValueError):
    """A ``layers=`` declaration that does not fit the model (said in one line)."""


@dataclasses.dataclass(frozen=True)
class LayerKey:
    """The last key of a layer's row path: prints as ``layer 3`` (``kernel[layer 3]``)."""

    index: int

    def __repr__(self) -> str:
        return f"layer {self.index}"

    __str__ = __repr__


def parse_layers(layers: object) -> tuple:
    """A ``layers=`` argument as a hashable tuple of (prefix, axis); a TypeError in one line otherwise."""
    if layers is None:
        return ()
    if not isinstance(layers, Mapping):
        raise TypeError(
            f"layers= takes a dict of path prefix -> layer axis, e.g. {{'blocks': 0}}; got {type(layers).__name__}"
        )
    out = []
    for prefix, axis in layers.items():
        if not isinstance(prefix, (str, tuple)):
            raise TypeError(f"layers=: a path prefix is a string or a tuple of keys, not {type(prefix).__name__}")
        if axis is not None:
            number = as_number(axis, integer=True)  # np.int64(0) too
            if number is None:
                raise TypeError(
                    f"layers={{{quote_repr(prefix)}: {quote_repr(axis)}}}: the layer axis is an int "
                    "(or None: no layer axis)"
                )
            axis = number
        out.append((prefix if isinstance(prefix, str) else tuple(prefix), axis))
    return tuple(out)


def parse_layer_option(texts: list[str] | None) -> dict | None:
    """``--layers blocks=0`` options (each ``PREFIX=AXIS``, AXIS an int or ``none``) as a ``layers=`` dict.

    >>> parse_layer_option(["blocks=0", "decoder.layers=-1", "enc=none"])
    {'blocks': 0, 'decoder.layers': -1, 'enc': None}
    """
    if not texts:
        return None
    out: dict = {}
    for text in texts:
        prefix, sep, axis = text.rpartition("=")
        axis = axis.strip()
        # an ASCII integer: str.isdigit() also takes '²', and lstrip('-') takes '--1'; int() refuses both
        if not sep or not (axis.lower() == "none" or re.fullmatch(r"-?[0-9]+", axis)):
            raise TypeError(f"layers=: {quote_repr(text)} is not PREFIX=AXIS (e.g. blocks=0)")
        out[prefix.strip()] = None if axis.lower() == "none" else int(axis)
    return out


def _under(row: _PathShape, prefix: str | tuple) -> bool:
    if isinstance(prefix, tuple):
        return row.path[: len(prefix)] == prefix
    if not prefix:
        return True
    text = path_text(row.path)
    return text == prefix or text.startswith(prefix + ".") or text.startswith(prefix + "[")


def declared_axes(rows: Sequence[_PathShape], spec: tuple, where: str = "") -> dict[int, int | None]:
    """Per row (anything with a ``path`` and a ``shape``: a snapshot's or compare's) under some declared
    prefix: its layer axis (the last matching declaration wins); ``where`` ends the no-Variable error.
    An entry (prefix, axis, n) from :func:`stacked_modules` only takes rows with n layers on that axis."""
    axes: dict[int, int | None] = {}
    for prefix, axis, *count in spec:
        if count:
            for i, row in enumerate(rows):
                shape = row.shape
                if _under(row, prefix) and shape is not None and len(shape) > axis and shape[axis] == count[0]:
                    axes[i] = axis
            continue
        hits = [i for i, row in enumerate(rows) if _under(row, prefix)]
        if not hits:
            raise LayerError(f"layers={{{quote_repr(prefix)}: {axis}}}: no Variable under {quote_repr(prefix)}{where}")
        for i in hits:
            shape = rows[i].shape
            if axis is not None and shape is not None:
                if not -len(shape) <= axis < len(shape):
                    raise LayerError(
                        f"layers={{{quote_repr(prefix)}: {axis}}}: {path_text(rows[i].path)} has shape {shape}, "
                        f"no axis {axis}"
                    )
                axes[i] = axis % len(shape)
            else:
                axes[i] = None
    return axes


def _child(row: Any, parent: int, layer: int, axis: int) -> Row:  # row: a Row whose shape and size are known
    shape = row.shape[:axis] + row.shape[axis + 1 :]
    n = row.shape[axis]
    return dataclasses.replace(
        row,
        path=row.path + (LayerKey(layer),),
        shape=shape,
        size=row.size // n,
        nbytes=None if row.nbytes is None else row.nbytes // n,
        aliases=(),
        metadata=None,
        sharding=None,
        logical=None,
        mismatch=None,
        layer_axis=None,
        layer_of=parent,
        layer=layer,
    )


def expand(described: Described, spec: tuple) -> Described:
    """``described`` (a ``_structure.Described``) with one child row per layer after every stacked
    Variable; ``layers`` says, per live position of a first child, (axis, number of layers).

    Worked out once per structure (kept in its ``Structure``, the expanded rows with a ``Structure`` of
    their own); a reused structure only picks its arrays."""
    key = (spec, bool(described.live) or not described.rows)
    expansions = described.structure.expansions
    if key not in expansions:
        expansions[key] = _expansion(described, spec)
    plan = expansions[key]
    if plan is None:
        return described
    return dataclasses.replace(
        described,
        rows=plan.rows,
        live=plan.live,
        arrays=[described.arrays[k] for k in plan.take],
        layers=plan.groups,
        structure=plan.structure,
    )


@dataclasses.dataclass(frozen=True)
class Expansion:
    """A structure's rows with one child row per layer of each stacked Variable."""

    rows: list  # the rows, each stacked Variable's followed by its layers'
    live: list[int]  # the rows whose statistics are computed
    take: list[int]  # per live row: the index of its array among the described arrays
    groups: dict[int, tuple[int, int]]  # live position of a first layer row -> (axis, number of layers)
    structure: Structure  # what snapshots derive from these rows


def _expansion(described: Described, spec: tuple) -> Expansion | None:
    declared = declared_axes(described.rows, spec)
    position = {i: k for k, i in enumerate(described.live)}
    rows: list = []
    live: list[int] = []
    take: list[int] = []
    groups: dict[int, tuple[int, int]] = {}
    for i, row in enumerate(described.rows):
        axis = declared[i] if i in declared else row.layer_axis
        if axis != row.layer_axis:
            row = dataclasses.replace(row, layer_axis=axis)
        j = len(rows)
        rows.append(row)
        k = position.get(i)
        if k is not None:
            live.append(j)
            take.append(k)
        if axis is None or row.status != "ok" or not row.size:
            continue
        if k is not None:
            groups[len(live)] = (axis, row.shape[axis])
        for layer in range(row.shape[axis]):
            if k is not None:
                live.append(len(rows))
                take.append(k)
            rows.append(_child(row, j, layer, axis))
    if len(rows) == len(described.rows) and all(a is b for a, b in zip(rows, described.rows)):
        return None
    return Expansion(rows, live, take, groups, Structure())


def stacked_modules(obj: Any, layers: object = None) -> tuple:
    """The stacked modules of ``obj`` (those ``nnx.vmap``/``nnx.scan`` made), as entries ``(module path,
    axis, layers)`` of a ``layers`` spec: a value sown inside the scan over such a module is stacked the
    same way, so a captured value under it with that many layers on that axis gets one row per layer.

    A stacked module is the outermost one below the root around a Variable with a known layer axis
    (flax's metadata, or ``layers``) all of whose Variables have that many layers on that axis (``head``
    below has 4 rows too, but the root is never taken for a stack).

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> class Block(nnx.Module):
    ...     def __init__(self):
    ...         self.w, self.b = nnx.Param(jnp.zeros((4, 3))), nnx.Param(jnp.zeros((4,)))
    >>> class M(nnx.Module):
    ...     def __init__(self):
    ...         self.blocks, self.head = Block(), nnx.Param(jnp.zeros((4, 2)))
    >>> stacked_modules(M(), {"blocks.w": 0})
    ((('blocks',), 0, 4),)
    """
    rows = [r for r in expand(describe(obj, stats=False), parse_layers(layers)).rows if r.layer_of is None]
    fits: dict = {}

    def all_stacked(prefix: tuple, axis: int, n: int) -> bool:
        key = (prefix, axis, n)
        if key not in fits:
            fits[key] = all(
                r.shape is not None and len(r.shape) > axis and r.shape[axis] == n and r.layer_axis in (None, axis)
                for r in rows
                if r.path[: len(prefix)] == prefix
            )
        return fits[key]

    out: dict = {}
    for row in rows:
        if row.layer_axis is None or not row.shape:
            continue
        axis, n = row.layer_axis, row.shape[row.layer_axis]
        module = row.path[:-1]
        while len(module) > 1 and all_stacked(module[:-1], axis, n):  # never the root: the model is not a stack
            module = module[:-1]
        out[module] = (module, axis, n)
    return tuple(out.values())


def check_layers(obj: Any, layers: object) -> tuple:
    """``layers`` parsed and checked against ``obj`` (walked once, nothing computed): a TypeError or
    :class:`LayerError` in one line before anything uses it."""
    spec = parse_layers(layers)
    if spec and obj is not None:  # None: a followed name holding no model now (its refreshes will say)
        expand(describe(obj, stats=False), spec)
    return spec
