"""Captured values as rows: one Variable per array (a sown tuple's entries each their own), their
snapshot and a histogram per row, dispatched behind the captured call and fetched later."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

import jax
import numpy as np
from flax import nnx
from flax.typing import Key, PathParts
from jax.core import Tracer

from .. import compat
from ..graph import Path
from ..live.threads import start_thread
from ..snapshot import LayerError, PendingSnapshot, Snapshot
from ..stats import histograms_dispatch, histograms_fetch, histograms_prepare, is_ready

if TYPE_CHECKING:
    #: ``layers=`` as the user gives it (path prefix -> layer axis), or the spec tuple ``core.snapshot``'s
    #: ``parse_layers`` (or a capture panel) makes of it.
    Layers: TypeAlias = Mapping[str, int | None] | tuple | None

__all__ = ["PendingTable", "Table", "flatten_captured"]


def flatten_captured(captured: nnx.State) -> nnx.State:
    """One Variable per array: a sown tuple becomes entries ``0, 1, ...`` under its name.

    >>> import jax.numpy as jnp
    >>> from nnx_lab.core.graph import path_text
    >>> s = nnx.State({"block": {"h": nnx.Intermediate((jnp.ones(2), jnp.zeros(3)))}})
    >>> [path_text(p) for p, _ in nnx.to_flat_state(flatten_captured(s))]
    ['block.h[0]', 'block.h[1]']
    """
    flat: list[tuple[PathParts, object]] = []
    for path, var in nnx.to_flat_state(captured):
        if not isinstance(var, nnx.Variable):
            flat.append((tuple(path), var))
            continue
        leaves, _ = jax.tree_util.tree_flatten_with_path(compat.get_value(var), is_leaf=lambda x: x is None)
        for keys, leaf in leaves:
            flat.append(((*path, *(_key(k) for k in keys)), type(var)(leaf)))
    return nnx.from_flat_state(flat) if flat else nnx.State({})


def _key(k: object) -> Key:
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return str(k)


@dataclasses.dataclass(frozen=True)
class Table:
    """A snapshot of flattened captured values with a histogram per row (row order)."""

    state: nnx.State
    snapshot: Snapshot
    hist: tuple


class PendingTable:
    """A Table whose statistics and histograms are on their way from the devices (see
    PendingSnapshot): the kernels are queued behind the call that produced the values."""

    def __init__(self, captured: nnx.State, bins: int, layers: Layers = None, strict: bool = True):
        self.state = flatten_captured(captured)
        by_path = {
            tuple(p): (compat.get_value(v) if isinstance(v, nnx.Variable) else v)
            for p, v in nnx.to_flat_state(self.state)
        }
        self.paths = list(by_path)
        live = [
            by_path[p]
            if isinstance(by_path[p], (jax.Array, np.ndarray)) and not isinstance(by_path[p], Tracer)
            else None
            for p in self.paths
        ]
        # The histograms' kernels compile on a thread while the statistics' compile here (two compiles
        # at once: flax's U-Net's first capture report 3.4 s -> 2.5 s on 2 cores); launched after them.
        compiling = start_thread(histograms_prepare, "nnx_lab-capture-histograms", arrays=live, bins=bins)
        try:
            try:
                self.snapshot = PendingSnapshot(self.state, layers=layers)
            except LayerError:
                if strict:
                    raise
                self.snapshot = PendingSnapshot(self.state)  # gradients: only where the values' layers fit
        finally:
            compiling.join()
        self.hists = histograms_dispatch(live, bins)

    def ready(self) -> bool:
        return self.snapshot.ready() and all(is_ready(h) for h in reversed(self.hists))

    def wait(self) -> None:
        self.snapshot.wait()
        jax.block_until_ready([h for h in self.hists if h is not None])

    def finish(self) -> Table:
        snap = self.snapshot.finish()
        hists: dict[Path, list[float] | None] = dict(zip(self.paths, histograms_fetch(self.hists)))
        return Table(self.state, snap, tuple(hists.get(r.path) if r.status == "ok" else None for r in snap.rows))
