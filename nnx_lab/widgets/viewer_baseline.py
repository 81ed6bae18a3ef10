"""The viewer's *compare to* control: a pinned baseline and each row's change since it.

Three baselines, by what they cost a big model:

- ``"stats"``: the statistics of the latest refresh (host numbers the viewer has anyway: free).
  The change shown is ``|‖θ‖ − ‖θ₀‖| / ‖θ₀‖``, a lower bound of ``‖θ − θ₀‖/‖θ₀‖`` (triangle
  inequality): it sees a norm that grows or shrinks, not a rotation at constant norm; below
  :data:`NOISE` (float32 rounding of the norms) it is 0.
- ``"arrays"``: a device copy of every array now (its bytes are said before and after pinning;
  nothing is kept unless asked). The change is the true ``‖θ − θ₀‖/‖θ₀‖``, computed by
  :func:`nnx_lab.compare` on the device at each published refresh (one more reduction pass over the
  parameters and the copy).
- a :class:`~nnx_lab.Snapshot` or a checkpoint path: that snapshot's statistics (a checkpoint's are
  streamed from disk once, when pinned): the same lower bound as ``"stats"``, nothing on the device.

Rows are matched by path text; a row the baseline lacks shows nothing, a row whose shape differs
from the baseline's shows ``"shape"`` (not compared, as :func:`nnx_lab.compare` refuses it).
"""

from __future__ import annotations

import logging
import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.snapshot import Snapshot, snapshot
from ..core.stats import STAT_NAMES
from ..core.text import first_line, quote_repr
from . import wire

if TYPE_CHECKING:
    from ..core.watcher import Watcher

__all__ = ["Baseline", "BaselineSource", "pin", "requested_source", "since_message"]

#: what a viewer compares to: "stats", "arrays", a Snapshot or a checkpoint path
BaselineSource = str | os.PathLike[str] | Snapshot

_log = logging.getLogger("nnx_lab")
_NORM = STAT_NAMES.index("norm")
#: a row's "since" value where its shape differs from the baseline's (compare()'s status for it)
SHAPE = "shape"
#: A relative change of a norm below this is the float32 reduction's rounding (two refreshes of an
#: unchanged array can differ by ~1e-7: programs that sum in another order), shown as 0.
NOISE = 1e-6


def _mb(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes:,} B"


class Baseline:
    """A pinned baseline: ``since(snap)`` is each row's change (None where there is none)."""

    def __init__(
        self,
        kind: str,
        label: str,
        norms: dict[str, float] | None = None,
        copy: Any = None,
        shapes: dict[str, tuple | None] | None = None,
    ):
        self.kind, self.label = kind, label
        self._norms, self._copy, self._shapes = norms, copy, shapes or {}
        self.device_bytes = 0
        if copy is not None:
            import jax

            self.device_bytes = sum(int(x.nbytes) for x in jax.tree.leaves(copy) if isinstance(x, jax.Array))

    def since(self, snap: Snapshot, target: Any = None) -> list[float | str | None]:
        """Per row its change since the baseline: a number, ``"shape"`` (its shape differs from the
        baseline's: not compared), or None (nothing to compare)."""
        texts = [row.path_text for row in snap.rows]
        if self._copy is not None:
            if target is None:
                return [None] * len(texts)
            from ..core.compare import compare

            rows = {
                r.path: SHAPE if r.status == SHAPE else _finite(r.rel_change)
                for r in compare(self._copy, target).rows
                if r.layer is None
            }
            return [rows.get(t) for t in texts]
        norms = snap.stat_matrix[:, _NORM]
        out: list[float | str | None] = []
        shapes = self._shapes
        for row, text, n in zip(snap.rows, texts, norms.tolist()):
            if text in shapes and shapes[text] is not None and row.shape is not None and shapes[text] != row.shape:
                out.append(SHAPE)  # another array at this path: its norm says nothing of a change
                continue
            n0 = self._norms.get(text) if self._norms else None
            if n0 and math.isfinite(n) and abs(n - n0) <= NOISE * n0:
                out.append(0.0)  # the same array: two refreshes' float32 norms differ in their last bits
                continue
            out.append(_finite(abs(n - n0) / n0) if n0 and math.isfinite(n) else (0.0 if n0 == 0 and n == 0 else None))
        return out

    path: str | None = None  # a checkpoint's directory (the control shows it in its path box)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "label": self.label, "device_bytes": self.device_bytes, "path": self.path}


def _finite(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _shapes(snap: Snapshot) -> dict[str, tuple | None]:
    return {row.path_text: row.shape for row in snap.rows}


def _norms(snap: Snapshot) -> dict[str, float]:
    norms = snap.stat_matrix[:, _NORM]
    return {row.path_text: float(n) for row, n in zip(snap.rows, norms.tolist()) if np.isfinite(n)}


def pin(source: BaselineSource, snap: Snapshot | None, target: Any, refresh: int) -> Baseline:
    """The baseline ``source`` names: ``"stats"``, ``"arrays"``, a Snapshot or a checkpoint path.

    Raises:
      TypeError / ValueError: one line, for a source that is none of these (or a path that is no checkpoint).
    """
    if isinstance(source, str) and source in ("stats", "arrays"):
        if snap is None:
            raise ValueError("compare to: the viewer has no statistics yet; pin after its first refresh")
        if source == "stats":
            return Baseline(
                "stats",
                f"\u2265 |\u0394\u2016\u03b8\u2016|/\u2016\u03b8\u2080\u2016 since refresh {refresh} (statistics)",
                _norms(snap),
                shapes=_shapes(snap),
            )
        if target is None:
            raise ValueError("compare to arrays: the watched model is gone or not bound now")
        import jax
        import jax.numpy as jnp
        from flax import nnx

        state = nnx.state(target) if isinstance(target, nnx.Module) else target
        copy = jax.tree.map(lambda x: jnp.array(x, copy=True) if isinstance(x, jax.Array) else x, state)
        base = Baseline("arrays", "", copy=copy)
        base.label = (
            f"\u2016\u03b8\u2212\u03b8\u2080\u2016/\u2016\u03b8\u2080\u2016 since refresh {refresh} "
            f"(device copy: {_mb(base.device_bytes)})"
        )
        return base
    if isinstance(source, Snapshot):
        return Baseline(
            "snapshot",
            "\u2265 |\u0394\u2016\u03b8\u2016|/\u2016\u03b8\u2080\u2016 against a snapshot",
            _norms(source),
            shapes=_shapes(source),
        )
    if isinstance(source, (str, os.PathLike)):
        base = snapshot(source)  # a checkpoint: its statistics streamed once (CheckpointError: one line)
        pinned = Baseline(
            "checkpoint",
            f"\u2265 |\u0394\u2016\u03b8\u2016|/\u2016\u03b8\u2080\u2016 against {os.fspath(source)}",
            _norms(base),
            shapes=_shapes(base),
        )
        pinned.path = os.fspath(source)
        return pinned
    raise TypeError(
        f"compare_to: expected 'stats', 'arrays', a Snapshot or a checkpoint path, not {type(source).__name__}"
    )


def requested_source(content: dict) -> str | None:
    """What a browser's "compare to" message asks :meth:`StateViewer.compare_to` to pin: None (unpin)
    for ``source: "none"`` only, ``"stats"`` or ``"arrays"``, or the ``path`` of ``source: "path"``.
    Anything else (no source, an unknown one, a path that is missing, null or blank) is a one-line
    ValueError, so a malformed message never removes the user's baseline.

    >>> requested_source({"source": "path", "path": "ckpt/step_10"}), requested_source({"source": "none"})
    ('ckpt/step_10', None)
    >>> requested_source({"source": "path", "path": None})
    Traceback (most recent call last):
    ValueError: source "path" needs a checkpoint path (a non-empty string), got None; the baseline is unchanged
    """
    source = content.get("source")
    if source == "none":
        return None
    if source in ("stats", "arrays"):
        return source
    if source == "path":
        path = content.get("path")
        if not isinstance(path, str) or not path.strip():
            raise ValueError(
                f'source "path" needs a checkpoint path (a non-empty string), got {quote_repr(path, 80)}; '
                "the baseline is unchanged"
            )
        return path
    raise ValueError(
        f"unknown source {quote_repr(source, 80)} (expected 'stats', 'arrays', 'path' or 'none'); "
        "the baseline is unchanged"
    )


def since_message(baseline: Baseline | None, watcher: Watcher) -> dict:
    """The "since" message for the browser: per row its change (None: none; "shape": its shape differs
    from the baseline's, not compared), the baseline's label."""
    snap = watcher.snapshot
    if baseline is None or snap is None:
        return {"type": wire.SINCE, "values": None, "baseline": None}
    try:
        values = baseline.since(snap, watcher.target if baseline.kind == "arrays" else None)
        problem = None
    except Exception as e:  # noqa: BLE001 - boundary: a refresh must not raise; the control says why
        _log.warning("nnx_lab: the change since the baseline was not computed", exc_info=True)
        values, problem = [None] * len(snap.rows), f"not computed: {type(e).__name__}: {first_line(str(e))}"
    return {
        "type": wire.SINCE,
        "refresh": watcher.refreshes,
        "rows": len(values),
        "values": values,
        "baseline": baseline.to_dict(),
        "problem": problem,
    }


def describe_problem(e: BaseException) -> str:
    return f"compare to: {first_line(str(e))}"
