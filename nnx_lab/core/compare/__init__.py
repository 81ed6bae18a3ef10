"""Comparisons: what changed between two models, states, snapshots or checkpoints (the modules'
roles: docs/ARCHITECTURE.md; how values are reduced: docs/guide/compare.md, "How it works").

>>> from flax import nnx
>>> a = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
>>> b = nnx.Linear(2, 3, rngs=nnx.Rngs(1))
>>> cmp = compare(a, b)
>>> cmp.verdict
'b loads into a: 0 missing, 0 unexpected, 0 shape mismatches; values: 1 identical, 1 changed'
>>> [(r.path, r.status) for r in cmp.rows]
[('kernel', 'changed'), ('bias', 'identical')]
"""

from __future__ import annotations

from typing import Any

from ._compare import compute
from ._comparison import DISPLAY_HOOKS, MARIMO_HOOKS, Comparison
from ._payload import comparison_payload
from ._rows import STATUSES

__all__ = [
    "DISPLAY_HOOKS",
    "MARIMO_HOOKS",
    "STATUSES",
    "Comparison",
    "compare",
    "comparison_payload",
]


def compare(
    a: Any,
    b: Any,
    *,
    tol: float = 0.0,
    map: Any = None,
    layers: dict | None = None,
    chunk_bytes: int | None = None,
) -> Comparison:
    """Compare ``b`` against ``a``: structure, then values, without changing either.

    Args:
      a, b: each an ``nnx.Module`` (or another flax graph node: an ``nnx.Optimizer``), an ``nnx.State`` (or the nested dict ``nnx.state`` makes), the
        ``(graphdef, state)`` pair of ``nnx.split``, a :class:`~nnx_lab.Snapshot` (structure only)
        or an Orbax checkpoint directory (``str`` / ``pathlib.Path``; read without restoring).
      tol: a number >= 0 (a numpy scalar too); an element is *changed* when ``|a - b| > tol`` (and its bits differ); rows with no
        changed element but some differing bits are ``equal``.
      map: b's paths renamed into a's: a dict of prefix renames (``{"params/Dense_0": "linear"}``)
        or a function of the ``/``-joined path returning the new one (None: leave it unmatched).
      layers: a's path prefix -> layer axis of stacked Variables (``{"blocks": 0}``), as
        ``snapshot(layers=)``: one extra row per layer. flax's ``PARTITION_NAME`` metadata needs none.
      chunk_bytes: most bytes read at once from a checkpoint (default ``core.checkpoint.CHUNK_BYTES``).

    Raises:
      TypeError: a side is none of the above (a tracer, a number...), or ``tol``/``map`` are malformed.
      ValueError: a ``layers=`` prefix holds no Variable of a.
    """
    rows, modules, info = compute(a, b, tol=tol, map=map, layers=layers, chunk_bytes=chunk_bytes)
    return Comparison(rows, modules, info)
