"""What checking the widgets' typed traits costs (nnx_lab/widgets/traits.py), against a warm refresh.

A live viewer of a 10,000-Variable model (2,500 blocks of Linear(8, 8) + LayerNorm(8)), warmed up.
Printed: the trait assignments one refresh makes (and so checks), the check of each payload at the
top level (what an assignment does), the deep check of the snapshot payload (every column walked:
what it would cost), and the warm refresh itself (refresh + wait), each a median of interleaved rounds.

Run: python benchmarks/bench_trait_validation.py [--variables 10000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variables", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from flax import nnx

    import nnx_lab
    from nnx_lab.widgets import traits

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(8, 8, rngs=rngs)
            self.norm = nnx.LayerNorm(8, rngs=rngs)

    model = nnx.List([Block(nnx.Rngs(i)) for i in range(args.variables // 4)])
    viewer = nnx_lab.watch(model, display=False, rows_first=False)
    viewer.send = lambda *a, **k: None  # no front end: what is sent is built, not delivered

    def refresh() -> None:
        viewer.refresh()
        viewer.watcher.wait()

    for _ in range(3):
        refresh()

    checked: list[str] = []
    validate = traits.Payload.validate

    def counting(self, obj, value):
        checked.append(self.name)
        return validate(self, obj, value)

    traits.Payload.validate = counting  # type: ignore[method-assign]
    for _ in range(5):
        refresh()
    traits.Payload.validate = validate  # type: ignore[method-assign]
    per_refresh = {name: checked.count(name) / 5 for name in sorted(set(checked))}

    snapshot, status = dict(viewer.snapshot), dict(viewer.status)
    trait = {name: viewer.traits()[name] for name in ("snapshot", "status", "alert")}
    cols = len(snapshot["rows"]["key"])
    figures: dict[str, list[float]] = {k: [] for k in ("refresh", "status", "snapshot", "deep")}
    for _ in range(args.rounds):
        figures["refresh"].append(median_s(refresh, 3))
        figures["status"].append(median_s(lambda: trait["status"].validate(viewer, status), 2000))
        figures["snapshot"].append(median_s(lambda: trait["snapshot"].validate(viewer, snapshot), 2000))
        figures["deep"].append(median_s(lambda: traits.problem(snapshot, traits.ViewerSnapshot, deep=True), 5))
    m = {k: statistics.median(v) for k, v in figures.items()}
    viewer.close()

    print(f"viewer of {cols:,} Variables; trait assignments per refresh (each checked): {per_refresh}")
    print(f"warm refresh (refresh + wait)          {m['refresh'] * 1e3:9.2f} ms")
    print(f"status check, top level (every refresh) {m['status'] * 1e6:8.2f} us  ({m['status'] / m['refresh']:.5%})")
    print(
        f"snapshot check, top level (new rows)    {m['snapshot'] * 1e6:8.2f} us  ({m['snapshot'] / m['refresh']:.5%})"
    )
    print(f"snapshot check, deep (not done)         {m['deep'] * 1e3:8.2f} ms  ({m['deep'] / m['refresh']:.2%})")


if __name__ == "__main__":
    main()
