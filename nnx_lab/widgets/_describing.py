"""The capture panel's descriptions of its calls: one call described and shown at once; inside a
loop, at most as often as a :class:`~nnx_lab.core.snapshot.Throttle` allows, never waiting for the
device (a description dispatched at one call is shown at a later call, once its numbers are there).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..core._util import one_line
from ..core.snapshot import Throttle


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
