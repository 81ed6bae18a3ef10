"""What a capture collected, described: one row per array, on-device statistics and histograms."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Sequence

from flax import nnx

from .. import render
from ..checks import MAX_BINS, check_number
from ..graph import Path
from ..snapshot import Snapshot
from ..stats import DEFAULT_BINS
from ._messages import messages as report_messages
from ._table import PendingTable
from ._types import DEFAULT_TYPES, resolve_types, type_names

if TYPE_CHECKING:
    from ._table import Layers
    from ._types import TypesSpec


@dataclasses.dataclass(frozen=True)
class CaptureReport:
    """What a capture collected, described: snapshot rows (one per sown array) with statistics and
    a histogram, the gradients likewise when there are any, and messages for the user.

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from nnx_lab import capture_call, capture_report
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> _, captured = capture_call(model, model, jnp.ones((1, 2)), methods=True)
    >>> report = capture_report(captured, bins=4)
    >>> [row.path_text for row in report.snapshot.rows], len(report.hist), report.messages
    (['__call__[0]', 'layers[0].__call__[0]'], 2, ())
    """

    captured: nnx.State
    grads: nnx.State | None
    types: tuple[type, ...]
    seen_types: tuple[type, ...]
    matched: tuple[Path, ...] | None
    messages: tuple[str, ...]
    snapshot: Snapshot
    hist: tuple
    grads_snapshot: Snapshot | None
    grads_hist: tuple | None
    bins: int

    @property
    def empty(self) -> bool:
        return len(self.snapshot.rows) == 0

    def to_dict(self, classes: dict[Path, str] | None = None) -> dict:
        """JSON payload for the capture panel (see the module docstring of nnx_lab.core.capture).
        ``classes``: module path -> class name, to label the container nodes with."""
        hist = {"bins": self.bins, "rows": list(self.hist)}
        snap = self.snapshot.to_dict()
        grads = None
        if self.grads_snapshot is not None:
            grads = {
                "snapshot": self.grads_snapshot.to_dict(),
                "hist": {"bins": self.bins, "rows": list(self.grads_hist or ())},
            }
        if classes is not None:
            for part in (snap, grads["snapshot"] if grads else None):
                if part is not None:
                    _name_modules(part, classes)
        return {
            "snapshot": snap,
            "hist": hist,
            "grads": grads,
            "messages": list(self.messages),
            "types": type_names(self.types),
            "seen": type_names(self.seen_types),
        }

    def to_text(self, max_rows: int | None = 50) -> str:
        return render.capture_text(self, max_rows)

    __repr__ = to_text

    def to_html(self, max_rows: int = 200) -> str:
        return render.capture_html(self, max_rows)

    _repr_html_ = to_html

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": self.to_text(), "text/html": self.to_html()}


def capture_report(
    captured: nnx.State,
    *,
    grads: nnx.State | None = None,
    types: TypesSpec = DEFAULT_TYPES,
    seen_types: Sequence[type] = (),
    matched: Sequence[Path] | None = None,
    bins: int = DEFAULT_BINS,
    only_text: str | None = None,
    inside_own: int = 0,
    layers: Layers = None,
) -> CaptureReport:
    """Describe captured values (and gradients): statistics and a histogram per array, computed on
    the device; only the numbers come to the host. ``matched``: the module paths an ``only``
    filter selected (None when there was no filter; ``only_text`` names that filter in the
    messages). The messages say what went wrong or
    was left out: a filter that matched nothing, nothing sown under the chosen types (naming
    the types that were), types sown but not chosen, no gradients, and the ``inside_own`` calls
    that ran inside the user's own ``nnx.capture`` (their values went to it, not here).

    Args:
      captured: the ``nnx.State`` a capture collected (``Capture.captured``, ``capture_call``'s).
      grads: the gradients at the ``perturb`` points (``intermediate_grads``'), if any.
      types: the Variable types that were chosen (for the messages).
      seen_types: every type sown (``Capture.seen_types``), chosen or not.
      matched: the module paths an ``only`` filter selected (``Capture.matched``).
      bins: histogram bins per array, an integer in [1, 1024].
      only_text: that filter as the user wrote it.
      inside_own: ``Capture.inside_own``.
      layers: path prefix -> layer axis of stacked values (sown inside ``nnx.scan``/``nnx.vmap``
        over layers: ``{"blocks": 0}``): one row per layer after each, as in :func:`nnx_lab.snapshot`.

    Raises:
      TypeError: ``captured`` is not a State.
      ValueError: ``bins`` out of range; a ``layers`` prefix with no value under it or no such axis.

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from nnx_lab import capture_call
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> _, captured = capture_call(model, model, jnp.ones((1, 2)), methods=True)
    >>> print(capture_report(captured, bins=4).to_text())
    captured 2 arrays (Intermediate)
    path                   type          shape   dtype    mean     std     min     max     histogram
    __call__[0]            Intermediate  (1, 3)  float32  -0.5281  0.5781  -1.346  -0.119  ...
    layers[0].__call__[0]  Intermediate  (1, 3)  float32  -0.5281  0.5781  -1.346  -0.119  ...
    """
    return PendingCaptureReport(
        captured,
        grads=grads,
        types=types,
        seen_types=seen_types,
        matched=matched,
        bins=bins,
        only_text=only_text,
        inside_own=inside_own,
        layers=layers,
    ).finish()


class PendingCaptureReport:
    """A capture report whose numbers are on their way: made without waiting for the device (the
    kernels queue behind the call that produced the values), finished once :meth:`ready`.
    ``host_s``: the host thread's CPU time spent on it."""

    def __init__(
        self,
        captured: nnx.State,
        *,
        grads: nnx.State | None = None,
        types: TypesSpec = DEFAULT_TYPES,
        seen_types: Sequence[type] = (),
        matched: Sequence[Path] | None = None,
        bins: int = DEFAULT_BINS,
        only_text: str | None = None,
        inside_own: int = 0,
        layers: Layers = None,
    ):
        start = time.thread_time()
        if not isinstance(captured, nnx.State):
            raise TypeError(
                f"capture_report needs the nnx.State a capture collected (Capture.captured), "
                f"got {type(captured).__name__}"
            )
        self._inside_own = check_number(inside_own, "inside_own", 0, float("inf"), integer=True)
        self._types = resolve_types(types)
        bins = check_number(bins, "bins", 1, MAX_BINS, integer=True)
        self._captured, self._grads, self._bins = captured, grads, bins
        self._seen, self._only_text = tuple(seen_types), only_text or "the `only` filter"
        self._matched = None if matched is None else tuple(matched)
        self._table = PendingTable(captured, bins, layers)
        self._grads_table = PendingTable(grads, bins, layers, strict=False) if grads is not None else None
        self.host_s = time.thread_time() - start

    def ready(self) -> bool:
        return self._table.ready() and (self._grads_table is None or self._grads_table.ready())

    def wait(self) -> None:
        """Block until the numbers have arrived (the device's time, not counted in ``host_s``)."""
        for table in (self._table, self._grads_table):
            if table is not None:
                table.wait()

    def finish(self) -> CaptureReport:
        """The report (waits for the devices if the numbers are not there yet)."""
        table = self._table.finish()
        start = time.thread_time()
        grads_table = self._grads_table.finish() if self._grads_table is not None else None
        messages = report_messages(
            table, grads_table, self._types, self._seen, self._matched, self._only_text, self._inside_own
        )
        report = CaptureReport(
            captured=self._captured,
            grads=self._grads,
            types=self._types,
            seen_types=self._seen,
            matched=self._matched,
            messages=tuple(messages),
            snapshot=table.snapshot,
            hist=table.hist,
            grads_snapshot=grads_table.snapshot if grads_table else None,
            grads_hist=grads_table.hist if grads_table else None,
            bins=self._bins,
        )
        self.host_s += time.thread_time() - start
        return report


def _name_modules(snap: dict, classes: dict[Path, str]) -> None:
    """Label the payload's container nodes with the class of the module at their path ('' for the
    groups a sown tuple makes), and its root with the model's class."""
    nodes = snap.get("nodes") or {}
    parents, keys = nodes.get("parent") or [], nodes.get("key") or []
    paths: list[Path] = []
    for parent, key in zip(parents, keys):
        paths.append((*(paths[parent] if 0 <= parent < len(paths) else ()), key))
    nodes["type"] = [classes.get(p, "") for p in paths]
    if () in classes:
        snap["root_type"] = classes[()]
