"""How often live work may run: at most ``max_rate`` times a second, and at most once per
``1 / budget`` times the host time the last one cost, so it takes at most ``budget`` of a loop's time.

>>> t = Throttle(2.0, 0.02, what="refreshes")
>>> t.interval
0.5
>>> t.cost(0.05)  # a refresh cost 50 ms of host time: at most one a 2.5 s
>>> t.interval
2.5
"""

from __future__ import annotations

from ..checks import MAX_RATE, check_number


class Throttle:
    """The interval between two runs of some live work (a viewer's refresh, a panel's description).

    Raises ``ValueError`` (one line) for a rate outside (0, MAX_RATE] or a budget outside (0, 1].
    """

    def __init__(self, max_rate: float, budget: float, *, what: str):
        max_rate = check_number(max_rate, f"max_rate ({what} per second)", 0, MAX_RATE, low_open=True)
        budget = check_number(budget, "budget (fraction of the loop's time)", 0, 1, low_open=True)
        self.max_rate, self.budget = float(max_rate), float(budget)
        self.interval = 1.0 / self.max_rate

    def cost(self, host_s: float) -> None:
        """Adapt the interval to what one run cost the host (its thread's CPU time, never the device's)."""
        self.interval = max(1.0 / self.max_rate, host_s / self.budget)
