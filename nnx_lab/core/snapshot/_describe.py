"""Describing a Variable without reading its data: a :class:`Row` (path, type, shape, dtype, bytes,
placement, annotation, status), before statistics are added."""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import TYPE_CHECKING, Mapping, TypedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ..compat import SHARDING_KEYS
from ..graph import Leaf, Path, path_text
from ..stats import is_numeric_dtype
from ..text import clip, one_line
from ._devices import annotation_check, placement

if TYPE_CHECKING:

    class _Common(TypedDict, total=False):
        """The fields every Row of a leaf has (``describe_leaf``), and the annotation's where there is one."""

        path: Path
        type: str
        metadata: str | None
        aliases: tuple[Path, ...]
        stats: dict | None
        param: bool | None
        note: str | None
        logical: str | None
        mismatch: str | None
        layer_axis: int | None

    class _ShapeFields(TypedDict):
        shape: tuple[int, ...]
        dtype: str
        size: int
        nbytes: int | None


_log = logging.getLogger("nnx_lab")

#: Sharding names that mark a layer axis in flax's metadata (the usual ``nnx.PARTITION_NAME``; see ``_layers``).
LAYER_NAMES = ("layers",)

#: Every status a row can have.
STATUSES = {
    "ok": "a live array, with statistics",
    "abstract": "a shape without data (nnx.eval_shape, ShapeDtypeStruct)",
    "deleted": "the buffer was deleted or donated",
    "prng_key": "a PRNG key array: no statistics",
    "non_numeric": "a value that is not a numeric array",
    "tracer": "a value being traced by jax (inside jit/grad): no data yet",
    "error": "statistics failed; see the row's note",
}


@dataclasses.dataclass(frozen=True)
class Row:
    """One Variable: what it is, where it lives, and (when live) its statistics.

    >>> from flax import nnx
    >>> from nnx_lab import snapshot
    >>> row = snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0))).rows[1]
    >>> row.path_text, row.type, row.shape, row.dtype, row.status
    ('kernel', 'Param', (2, 3), 'float32', 'ok')
    """

    path: Path
    type: str
    shape: tuple[int, ...] | None
    dtype: str | None
    size: int | None
    nbytes: int | None
    sharding: str | None
    devices: str | None
    metadata: str | None
    aliases: tuple[Path, ...]
    status: str
    stats: dict | None
    note: str | None = None
    logical: str | None = None  # the sharding annotation (flax's out_sharding), e.g. "('embed', 'mlp')"
    mismatch: str | None = None  # how placement and annotation disagree, when they do
    layer_axis: int | None = None  # a stacked Variable's layer axis (flax's metadata or layers=): see _layers
    layer_of: int | None = None  # a layer's row: the index of its stacked Variable's row
    layer: int | None = None  # a layer's row: which layer
    param: bool | None = None  # an nnx.Param (True), another Variable type (False), a bare array (None)

    @property
    def path_text(self) -> str:
        return path_text(self.path)


def describe_leaf(leaf: Leaf) -> Row:
    """The row of one leaf of the graph walk, without statistics."""
    value = leaf.value
    metadata, failed = _metadata_text(leaf.metadata)
    common: _Common = {
        "path": leaf.path,
        "type": leaf.type_name,
        "metadata": metadata,
        "aliases": leaf.aliases,
        "stats": None,
        "param": leaf.param,
        "note": failed,
    }
    if isinstance(value, Tracer):
        return Row(**common, **_shape_fields(value), sharding=None, devices=None, status="tracer")
    if isinstance(value, (jax.ShapeDtypeStruct, jax.Array)) and leaf.metadata:
        common["logical"], common["mismatch"] = annotation_check(value, leaf.metadata)
        common["layer_axis"] = metadata_axis(leaf.metadata, len(value.shape))
    if isinstance(value, jax.ShapeDtypeStruct):
        sharding, devs = placement(value)
        return Row(**common, **_shape_fields(value), sharding=sharding, devices=devs, status="abstract")
    if isinstance(value, jax.Array):
        sharding, devs = placement(value)
        status = "deleted" if value.is_deleted() else _dtype_facts(value.dtype)[2]
        return Row(**common, **_shape_fields(value), sharding=sharding, devices=devs, status=status)
    if isinstance(value, (np.ndarray, np.generic, int, float, complex)) and is_numeric_dtype(np.asarray(value).dtype):
        return Row(**common, **_shape_fields(np.asarray(value)), sharding=None, devices="host", status="ok")
    return Row(
        **common,
        shape=None,
        dtype=type(value).__name__,
        size=None,
        nbytes=None,
        sharding=None,
        devices=None,
        status="non_numeric",
    )


def _metadata_text(metadata: Mapping) -> tuple[str | None, str | None]:
    """The metadata as ``key=repr`` text (a repr that raises: ``<repr failed: Error>``), and the row's
    note naming those failures (None when every repr worked): the row shows them, not a blank.

    >>> class Bad:
    ...     def __repr__(self):
    ...         raise ValueError("no repr")
    >>> _metadata_text({"tag": Bad(), "n": 1})
    ('tag=<repr failed: ValueError>, n=1', 'metadata tag: its repr raised ValueError: no repr')
    """
    parts, failures = [], []
    for key, value in metadata.items():
        try:
            text = repr(value)
            if not isinstance(text, str):
                raise TypeError(f"__repr__ returned {type(text).__name__}, not str")
        except Exception as e:  # noqa: BLE001 - any user __repr__ may raise anything: said in the row
            _log.debug("nnx_lab: the repr of metadata %r raised", key, exc_info=True)
            failures.append(f"metadata {clip(str(key), 60)}: its repr raised {one_line(e, 160)}")
            text = f"<repr failed: {type(e).__name__}>"  # as core.text.safe_repr writes it
        parts.append(f"{key}={clip(text, 200)}")
    return ", ".join(parts) or None, "; ".join(failures) or None


_dtypes: dict = {}  # dtype -> (text, itemsize, status of a live array of it)


def _dtype_facts(dtype: np.dtype) -> tuple[str, int | None, str]:
    try:
        return _dtypes[dtype]
    except (KeyError, TypeError):
        pass
    try:
        itemsize = dtype.itemsize
    except Exception:  # noqa: BLE001 - boundary: a user's dtype object may raise anything; the row says what it can
        _log.debug("nnx_lab: a dtype without an item size: %r", dtype, exc_info=True)
        itemsize = None
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        status = "prng_key"
    else:
        status = "ok" if is_numeric_dtype(dtype) else "non_numeric"
    facts = (str(dtype), itemsize, status)
    try:
        _dtypes[dtype] = facts
    except TypeError:
        pass
    return facts


def _shape_fields(value: jax.Array | jax.ShapeDtypeStruct | Tracer | np.ndarray | np.generic) -> _ShapeFields:
    shape = tuple(int(d) for d in value.shape)
    size = math.prod(shape)
    text, itemsize, _ = _dtype_facts(value.dtype)
    return {"shape": shape, "dtype": text, "size": size, "nbytes": size * itemsize if itemsize is not None else None}


def devices_of(leaves: list[Leaf]) -> list | None:
    found = set()
    for leaf in leaves:
        v = leaf.value
        if isinstance(v, jax.Array) and not isinstance(v, Tracer):
            found.update(v.sharding.device_set)
    return sorted(found, key=lambda d: (d.platform, d.id)) or None


def metadata_axis(metadata: Mapping, ndim: int | None) -> int | None:
    """The layer axis flax recorded in a Variable's sharding names, or None."""
    if not ndim:
        return None
    for key in SHARDING_KEYS:
        names = metadata.get(key)
        if isinstance(names, (tuple, list)) and len(names) == ndim:
            for axis, name in enumerate(names):
                if name in LAYER_NAMES or (isinstance(name, (tuple, list)) and any(n in LAYER_NAMES for n in name)):
                    return axis
    return None
