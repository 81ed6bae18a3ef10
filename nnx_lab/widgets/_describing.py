"""The capture panel's descriptions of its calls: one call described and shown at once; inside a
loop, at most as often as a :class:`~nnx_lab.core.live.Throttle` allows, never waiting for the
device (a description dispatched at one call is shown at a later call, once its numbers are there).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from ..core._text import first_line, one_line
from ..core.live import Throttle
from ..core.snapshot import LayerError, parse_layers, stacked_modules


class Descriptions:
    """The last call not shown yet (``unshown``) and the description on its way (``describing``).

    ``show(report, modules, elapsed, loss)`` puts a finished description on screen; ``fail(text)``
    says that describing failed (the loop goes on).
    """

    def __init__(self, throttle: Throttle, show: Callable[..., None], fail: Callable[[str], None]):
        self.throttle = throttle
        self._show, self._fail = show, fail
        self.unshown: tuple | None = None  # (describe, modules, elapsed, loss) of the last call
        self.describing: tuple | None = None  # (pending report, modules, elapsed, loss)
        self._last_dispatch = float("-inf")

    def hold(self, describe: Callable[[], Any], modules: Any, elapsed: float, loss: Any) -> None:
        """The newest call: described at the next :meth:`step` the throttle allows, or by :meth:`dispatch`."""
        self.unshown = (describe, modules, elapsed, loss)

    def step(self) -> None:
        """Inside a loop: show what has arrived, dispatch the newest call when the throttle allows."""
        if self.describing is not None and self.describing[0].ready():
            self.show_described()
        if self.describing is None and time.monotonic() - self._last_dispatch >= self.throttle.interval:
            self.dispatch()

    def dispatch(self) -> None:
        """Queue the held call's description on the device (statistics, histograms); never waits."""
        if self.unshown is None:
            return
        describe, modules, elapsed, loss = self.unshown
        self.unshown = None
        try:
            pending = describe()
        except Exception as error:  # a description that fails must not break the loop
            self._fail(f"describing the captured values failed: {one_line(error)}")
            return
        self._last_dispatch = time.monotonic()
        self.describing = (pending, modules, elapsed, loss)

    def show_described(self) -> None:
        """Show the dispatched description (waiting for its numbers if need be)."""
        describing, self.describing = self.describing, None
        if describing is None:
            return
        pending, modules, elapsed, loss = describing
        try:
            pending.wait()  # the device's time: not counted
            report = pending.finish()
        except Exception as error:
            self._fail(f"describing the captured values failed: {one_line(error)}")
            return
        self.throttle.cost(pending.host_s)
        self._show(report, modules, elapsed, loss)

    def clear(self) -> None:
        self.unshown = self.describing = None


class LayerAxes:
    """The capture panel's layer axes (``capture_panel(model, layers={"blocks": 0})``): the model's
    stacked modules (flax's metadata; a value sown inside the scan over them is stacked the same way),
    worked out again when its modules change, then the user's declaration, which wins. A malformed
    declaration is a TypeError at once; one that fits no captured value is a message in the report
    (the values get one row each), as ``%%nnx_capture --layers`` does."""

    def __init__(self, layers: Any):
        self.declared = parse_layers(layers)
        self._key: Any = None
        self._derived: tuple = ()

    def spec(self, model: Any, modules: Any) -> tuple:
        key = tuple(modules)
        if key != self._key:
            try:
                self._derived = stacked_modules(model, dict(self.declared) or None)
            except Exception:  # noqa: BLE001 - the report's rows say what is odd; the capture goes on
                self._derived = ()
            self._key = key
        return self._derived + self.declared

    def describe(self, make: Callable[[Any], Any], spec: tuple) -> Any:
        """``make(layers)``: a pending report; with the stacked modules alone, and a message, when
        the declaration fits no captured value."""
        try:
            return make(spec)
        except LayerError as e:
            return _Noted(make(tuple(entry for entry in spec if len(entry) == 3)), f"layers=: {first_line(str(e))}")


class _Noted:
    """A pending capture report whose report gets one more message."""

    def __init__(self, pending: Any, note: str):
        self._pending, self._note = pending, note
        self.host_s = pending.host_s

    def ready(self) -> bool:
        return self._pending.ready()

    def wait(self) -> None:
        self._pending.wait()

    def finish(self) -> Any:
        report = self._pending.finish()
        return dataclasses.replace(report, messages=(*report.messages, self._note))


def as_float(x: Any) -> float | None:
    """A loss shown in the panel's status (None when it is no number)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return None
