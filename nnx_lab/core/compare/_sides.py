"""One side of a comparison as a flat list of entries: a model, a State, a split pair, a snapshot or a
checkpoint path, walked with the project's one graph walk (flax's graph API: ``core.graph``)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from flax.nnx import graph as nnx_graph
from jax.core import Tracer

from ..graph import Path, path_text, split_pair, walk_graph
from ..snapshot import sharding_text
from ..text import first_line

__all__ = ["Entry", "Side", "resolve_side"]


@dataclasses.dataclass
class Entry:
    """One Variable (or array) of a side, before it is matched."""

    path: Path
    type: str | None  # the Variable type; None where the source does not say (a checkpoint)
    shape: tuple[int, ...] | None
    dtype: str | None
    sharding: str | None  # None: one device or unknown (never a mismatch)
    aliases: tuple[Path, ...]
    kind: str  # array, abstract, tracer, prng_key, non_numeric, deleted, checkpoint, error
    value: Any = None  # the array (kind array / prng_key), or the checkpoint entry (kind checkpoint)
    note: str | None = None
    metadata: Mapping | None = None
    key_data_shape: tuple[int, ...] | None = None  # a PRNG key array's key data (what Orbax saves)

    @functools.cached_property
    def text(self) -> str:  # read per row and per match: computed once
        return path_text(self.path)

    @property
    def size(self) -> int | None:
        return None if self.shape is None else math.prod(self.shape)


@dataclasses.dataclass
class Side:
    label: str  # "a" or "b"
    root_type: str
    entries: list[Entry]
    checkpoint: Any = None  # the CheckpointTree, for a checkpoint side


def _numeric(dtype: Any) -> bool:
    return (
        jnp.issubdtype(dtype, np.number)
        and not jnp.issubdtype(dtype, np.complexfloating)
        or jnp.issubdtype(dtype, np.bool_)
    )


@functools.cache  # asked per array, decided per dtype
def _facts(dtype: Any) -> tuple[bool, bool, str]:
    """A dtype's (is a PRNG key, numeric, its text)."""
    prng = jnp.issubdtype(dtype, jax.dtypes.prng_key)
    return prng, not prng and _numeric(dtype), str(dtype)


def _entry(path: Path, type_name: str | None, value: Any, aliases: tuple[Path, ...], metadata: Mapping | None) -> Entry:
    e = Entry(path, type_name, None, None, None, aliases, "non_numeric", metadata=metadata)
    if isinstance(value, Tracer):
        e.kind, e.note = "tracer", "a value being traced by jax (inside jit/grad): no data to compare"
        return e
    if isinstance(value, (int, float, bool, np.generic)) and not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if not isinstance(value, (jax.Array, np.ndarray, jax.ShapeDtypeStruct)):
        e.value, e.note = value, f"{type(value).__name__}: not an array"
        return e
    prng, numeric, e.dtype = _facts(value.dtype)
    e.shape = tuple(value.shape)
    if isinstance(value, jax.Array) and value.is_deleted():
        e.kind, e.note = "deleted", "the buffer was deleted or donated"
        return e
    e.sharding = sharding_text(getattr(value, "sharding", None))  # as a snapshot's row says it
    if isinstance(value, jax.ShapeDtypeStruct):
        e.kind, e.note = "abstract", "abstract (a shape without data)"
    elif prng:
        e.kind, e.value, e.note = "prng_key", value, "a PRNG key array: compared bit for bit (its key data)"
        e.key_data_shape = tuple(jax.eval_shape(jax.random.key_data, value).shape)
    elif not numeric:
        e.note = f"dtype {value.dtype}: not compared"
    else:
        e.kind, e.value = "array", value
    return e


def _checkpoint_side(label: str, path: Any) -> Side:
    from ..checkpoint import numeric_dtype, read_tree

    tree = read_tree(path)
    entries = []
    for e in tree.entries:
        kind, note = ("checkpoint", None) if e.note is None else ("error", e.note)
        if kind == "checkpoint" and not numeric_dtype(e.dtype):
            kind, note = "non_numeric", f"dtype {e.dtype}: not compared"
        entries.append(Entry(e.path, None, e.shape, e.dtype, None, (), kind, e, note))
    return Side(label, "Checkpoint", entries, checkpoint=tree)


def _snapshot_side(label: str, snap: Any) -> Side:
    entries = [
        Entry(
            r.path,
            r.type,
            r.shape,
            r.dtype,
            r.sharding,
            r.aliases,
            "abstract",
            None,
            "a snapshot holds descriptions, not values",
        )
        for r in snap.rows
        if r.layer_of is None
    ]
    return Side(label, f"Snapshot({snap.root_type})", entries)


def resolve_side(label: str, obj: Any) -> Side:
    """``obj`` as a :class:`Side`; a TypeError in one line for anything else."""
    from ..snapshot import Snapshot, remembered

    if isinstance(obj, (str, bytes)) or hasattr(obj, "__fspath__"):
        if isinstance(obj, bytes):
            raise TypeError(f"compare: {label} is bytes; give a checkpoint path as str or pathlib.Path")
        return _checkpoint_side(label, obj)
    if isinstance(obj, Snapshot):
        return _snapshot_side(label, obj)
    if isinstance(obj, Tracer):
        raise TypeError(
            f"compare: {label} is a jax tracer (compare() was called inside jit/grad/vmap); "
            "call it outside the transformation"
        )
    # nnx.State is a Mapping; any other flax graph node (an nnx.Optimizer, an nnx.Pytree/Object holding
    # Variables) is walked as a model is
    graph_node = isinstance(obj, (nnx.Module, nnx.Variable, Mapping)) or nnx_graph.is_graph_node(obj)
    if not graph_node and split_pair(obj) is None:
        raise TypeError(
            f"compare: {label} is {type(obj).__name__}, not an nnx.Module (or other flax graph node, e.g. an "
            "nnx.Optimizer), an nnx.State, a (graphdef, state) pair, a Snapshot or a checkpoint path"
        )
    try:
        structure = remembered(obj)  # a model compared again (or snapshotted before) is not walked again
        walk = structure.walk(obj) if structure is not None else walk_graph(obj)
    except (TypeError, ValueError) as e:
        raise TypeError(f"compare: {label} cannot be walked: {first_line(str(e), 200)}") from None
    # A type only where it is a Variable's: a bare array's ("Array") or a Linen collection's ("params")
    # name is no Variable type to disagree with.
    entries = [
        _entry(
            leaf.path,
            leaf.type_name if leaf.param is not None and leaf.type_name != leaf.path[0] else None,
            leaf.value,
            leaf.aliases,
            leaf.metadata,
        )
        for leaf in walk.leaves
    ]
    return Side(label, walk.root_type, entries)
