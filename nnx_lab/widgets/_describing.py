"""The capture panel's descriptions of its calls, on the live-refresh engine
(:class:`~nnx_lab.core.live.Refresher`, one description in flight): one call described and shown at
once; inside a loop, at most as often as its throttle allows, never waiting for the device (a
description dispatched at one call is shown at a later call, once its numbers are there).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..core.capture import CaptureReport, GradResult, Modules, PendingCaptureReport
from ..core.graph import path_text
from ..core.live import Pending, Refresher, Throttle
from ..core.render import format_number
from ..core.snapshot import LayerError, parse_layers, stacked_modules
from ..core.text import first_line, one_line
from ._base import background_unsupported

if TYPE_CHECKING:
    from flax import nnx

logger = logging.getLogger("nnx_lab")


class PendingReport(Pending, Protocol):
    """A capture report on its way (:class:`~nnx_lab.core.capture.PendingCaptureReport`, or one with a note)."""

    def finish(self) -> CaptureReport: ...


class Description:
    """A call's description on its way (a :class:`~nnx_lab.core.live.Pending`): its pending report and
    what the panel shows beside it (``modules``, ``elapsed``, ``loss``)."""

    def __init__(self, pending: PendingReport, modules: Modules, elapsed: float, loss: Any):
        self._pending, self.modules, self.elapsed, self.loss = pending, modules, elapsed, loss
        self.host_s: float = pending.host_s  # the pending report's, again after finish() (which adds its own)

    def ready(self) -> bool:
        return self._pending.ready()

    def wait(self) -> None:
        self._pending.wait()

    def finish(self) -> CaptureReport:
        try:
            return self._pending.finish()
        finally:
            self.host_s = self._pending.host_s


class Descriptions:
    """The last call not described yet (``unshown``) and the ``engine`` that describes it.

    ``show(report, modules, elapsed=, loss=)`` puts a finished description on screen; ``fail(text)``
    says that describing failed (the loop goes on). Publishing threads are ``nnx_lab-capture-publish``.
    """

    def __init__(self, throttle: Throttle, show: Callable[..., None], fail: Callable[[str], None]):
        self._show, self._fail = show, fail
        self.unshown: tuple | None = None  # (describe, modules, elapsed, loss) of the last call
        self._last_failure = ""  # logged at warning level once
        # time.monotonic looked up at each read: the panel's tests move the module's clock.
        clock = lambda: time.monotonic()  # noqa: E731
        self.engine = Refresher(
            throttle, self._dispatch, self._publish, clock=clock, max_in_flight=1, publisher="nnx_lab-capture-publish"
        )

    @property
    def throttle(self) -> Throttle:
        return self.engine.throttle

    def hold(self, describe: Callable[[], PendingReport], modules: Modules, elapsed: float, loss: Any) -> None:
        """The newest call: described at the next :meth:`step` the throttle allows, or by :meth:`flush`."""
        self.unshown = (describe, modules, elapsed, loss)

    def step(self) -> None:
        """Inside a loop: show what has arrived, dispatch the newest call when the throttle allows."""
        self.engine.refresh()

    def flush(self, *, wait: bool) -> bool:
        """Describe the held call now (or show the one on its way): at once with ``wait`` or where widget
        messages cannot come from threads, else by a thread once its numbers arrive. Whether a
        description is still on its way."""
        engine = self.engine
        engine.publish_from_thread = background_unsupported() is None
        wait = wait or not engine.publish_from_thread
        if self.unshown is not None:
            engine.refresh(force=True, wait=wait)
        elif engine.in_flight:  # dispatched inside a loop, not arrived yet
            engine.wait() if wait else engine.publish_when_ready(engine.in_flight[-1])
        return bool(engine.in_flight)

    def clear(self) -> None:
        self.unshown = None
        self.engine.drop()

    # -- the engine's work ---------------------------------------------------------------------------
    def _dispatch(self, defer: bool, skip_unchanged: bool) -> Description | None:
        """Queue the held call's description on the device (statistics, histograms); never waits."""
        if self.unshown is None:
            return None
        describe, modules, elapsed, loss = self.unshown
        self.unshown = None
        try:
            return Description(describe(), modules, elapsed, loss)
        except Exception as error:  # noqa: BLE001 - a boundary (the panel's call): the loop goes on
            self._failed(error)
            return None

    def _publish(self, newest: Description, dropped: list, step: int, wait: bool, arrived: bool) -> bool:
        try:
            newest.wait()  # the device's time: not counted
            report = newest.finish()
        except Exception as error:  # noqa: BLE001 - a boundary (a refresh of the panel): said, the loop goes on
            self._failed(error)
            return False
        self.engine.throttle.cost(newest.host_s)
        self._show(report, newest.modules, elapsed=newest.elapsed, loss=newest.loss)
        return True

    def _failed(self, error: Exception) -> None:
        text = f"describing the captured values failed: {one_line(error)}"
        level = logging.DEBUG if text == self._last_failure else logging.WARNING
        logger.log(level, "nnx_lab: %s", text, exc_info=error)
        self._last_failure = text
        self._fail(text)


class LayerAxes:
    """The capture panel's layer axes (``capture_panel(model, layers={"blocks": 0})``): the model's
    stacked modules (flax's metadata; a value sown inside the scan over them is stacked the same way),
    worked out again when its modules change, then the user's declaration, which wins. A malformed
    declaration is a TypeError at once; one that fits no captured value is a message in the report
    (the values get one row each), as ``%%nnx_capture --layers`` does."""

    def __init__(self, layers: object):
        self.declared = parse_layers(layers)
        self._key: tuple | None = None
        self._derived: tuple = ()

    def spec(self, model: nnx.Module, modules: Modules) -> tuple:
        key = tuple(modules)
        if key != self._key:
            try:
                self._derived = stacked_modules(model, dict(self.declared) or None)
            except Exception:  # noqa: BLE001 - a boundary (the panel's call): the report's rows say what is odd
                logger.debug("nnx_lab: the capture panel could not find the stacked modules", exc_info=True)
                self._derived = ()
            self._key = key
        return self._derived + self.declared

    def later(self, make: Callable[[tuple], PendingCaptureReport], spec: tuple) -> Callable[[], PendingReport]:
        """What describes the call when the panel's engine dispatches it: :meth:`describe`."""
        return lambda: self.describe(make, spec)

    def describe(self, make: Callable[[tuple], PendingCaptureReport], spec: tuple) -> PendingReport:
        """``make(layers)``: a pending report; with the stacked modules alone, and a message, when
        the declaration fits no captured value."""
        try:
            return make(spec)
        except LayerError as e:
            return _Noted(make(tuple(entry for entry in spec if len(entry) == 3)), f"layers=: {first_line(str(e))}")


class _Noted:
    """A pending capture report whose report gets one more message."""

    def __init__(self, pending: PendingCaptureReport, note: str):
        self._pending, self._note = pending, note
        self.host_s = pending.host_s

    def ready(self) -> bool:
        return self._pending.ready()

    def wait(self) -> None:
        self._pending.wait()

    def finish(self) -> CaptureReport:
        report = self._pending.finish()
        return dataclasses.replace(report, messages=(*report.messages, self._note))


def grads_report(result: GradResult, options: dict, seen: tuple) -> Callable[[Any], PendingCaptureReport]:
    """``make(layers)`` for :meth:`LayerAxes.describe`: the pending report of ``panel.grads``'s result
    (the forward values and their gradients) under the call's ``options``. (``layers``: the spec tuple
    of :meth:`LayerAxes.spec`, which ``PendingCaptureReport`` takes as it takes a user's dict.)"""
    only = options.get("only")
    matched = None if only is None else tuple(sorted(only.paths, key=path_text))
    return lambda layers: PendingCaptureReport(
        result.forward, grads=result.grads, types=options["types"], seen_types=seen, matched=matched, layers=layers
    )


def loss_status(loss: Any) -> dict[str, Any]:
    """The status fields of a call's loss (``None``: a plain call, no loss): ``kind``, ``loss`` (a
    finite number, else None: JSON has no NaN, and jupyter_client would send the string "nan") and
    ``loss_text``, what the panel shows ("NaN" and "inf" too; "" when the loss is no number).

    >>> loss_status(0.25), loss_status(float("nan"))["loss_text"], loss_status(None)["kind"]
    ({'kind': 'grads', 'loss': 0.25, 'loss_text': '0.25'}, 'NaN', 'call')
    """
    if loss is None:
        return {"kind": "call", "loss": None, "loss_text": ""}
    try:
        value: float | None = float(loss)
    except (TypeError, ValueError):
        value = None
    finite = value if value is not None and math.isfinite(value) else None
    return {"kind": "grads", "loss": finite, "loss_text": format_number(value)}
