"""Timing shared by the benchmarks: the machine is shared and noisy, so contenders are timed in
interleaved rounds and each gets the median of its round medians."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def interleaved(contenders: dict[str, Callable[[], object]], *, rounds: int = 5, repeats: int = 5) -> dict[str, float]:
    """Seconds per call of each contender: median over `rounds` of the median of `repeats` calls."""
    per_round: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            per_round[name].append(statistics.median(times))
    return {name: statistics.median(t) for name, t in per_round.items()}
