"""The rows of a summary: one per recorded module call, in call (tree) order, plus one per layer of a stack."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from typing import TYPE_CHECKING

from ..graph import path_text
from ._data import SummaryRow
from ._formats import describe, leaves_bytes

if TYPE_CHECKING:
    from flax import nnx

    from ._costs import Tally
    from ._trace import Call

_log = logging.getLogger("nnx_lab")


def _kept(calls: list, tally: Tally) -> list:
    """The calls of the program: a call no equation names is dropped when a call of the same module,
    method and parent is named (a transform that traced its body twice)."""
    named = {(c.parent, c.site, c.method) for c in calls if c.id in tally.trips}
    return [c for c in calls if c.id in tally.trips or c.parent is None or (c.parent, c.site, c.method) not in named]


def _occurrences(calls: list) -> dict:
    """call id -> (site, method, k): the k-th call of that module's method (to match two traces' calls)."""
    seen: Counter = Counter()
    out = {}
    for c in calls:
        seen[c.site, c.method] += 1
        out[c.id] = (c.site, c.method, seen[c.site, c.method])
    return out


def _stacks(model: nnx.Module | None, layers: object) -> dict:
    """module path -> number of layers, for stacked modules (nnx.vmap / nnx.scan, see core.snapshot._layers)."""
    if model is None:  # no layer axis declared nor in any Variable's metadata: stacks only from scans
        return {}
    try:
        from ..snapshot import stacked_modules

        return {tuple(path): n for path, _axis, n in stacked_modules(model, layers)}
    except Exception as e:  # noqa: BLE001 - an undeclared stack is still shown, as one row
        _log.debug("nnx_lab.summary: no stacked modules: %s", e)
        return {}


def build_rows(
    calls: list,
    sites: list,
    tally: Tally,
    back: tuple | None,
    own: dict,
    total: dict,
    model: nnx.Module | None,
    layers: object,
) -> list[SummaryRow]:
    calls = _kept(calls, tally)
    ids = {c.id for c in calls}
    depth: dict = {}
    numbers = _occurrences(calls)
    counts = Counter((c.site, c.method) for c in calls)
    back_by_key: dict = {}
    if back is not None:
        back_tally, back_calls = back
        back_by_key = {key: cid for cid, key in _occurrences(back_calls).items()}
    stacks = _stacks(model, layers)
    rows: list[SummaryRow] = []
    for c in calls:
        parent = c.parent if c.parent in ids else None
        depth[c.id] = 0 if parent is None else depth[parent] + 1
        path = sites[c.site]
        text = path_text(path) if path else ""
        if c.method != "__call__":
            text = f"{text}.{c.method}" if text else c.method
        site, method, k = numbers[c.id]
        if counts[(site, method)] > 1:
            text = f"{text} (call {k})"
        trips = tally.trips.get(c.id, 1) // max(1, tally.trips.get(parent, 1) if parent is not None else 1)
        n_layers = trips if trips > 1 else stacks.get(path, 1)
        flops, nbytes = tally.flops.get(c.id, 0), tally.bytes.get(c.id, 0)
        bwd_flops = bwd_bytes = None
        if back is not None:
            bid = back_by_key.get(numbers[c.id])
            bwd_flops = max(0, back_tally.flops.get(bid, 0) - flops) if bid is not None else None
            bwd_bytes = max(0, back_tally.bytes.get(bid, 0) - nbytes) if bid is not None else None
        # traced once for every iteration of the scans around it; a vmapped stack's outputs are unbatched
        runs = max(1, tally.trips.get(c.id, 1)) * (n_layers if trips == 1 else 1)
        out_bytes = leaves_bytes(_leaves(c.outputs)) * runs
        row = SummaryRow(
            path=text or "",
            module_path=tuple(path),
            cls=c.cls.__name__,
            method=method,
            call=k,
            depth=depth[c.id],
            inputs=describe(_inputs(c)),
            outputs=describe(c.outputs),
            params_own=_copy(own.get(tuple(path), {})),
            params_total=_copy(total.get(tuple(path), {})),
            flops=flops,
            transcendentals=tally.transcendentals.get(c.id, 0),
            bytes_accessed=nbytes,
            output_bytes=out_bytes,
            backward_flops=bwd_flops,
            backward_bytes=bwd_bytes,
            layers=n_layers if n_layers > 1 else None,
            rng_flops=tally.rng_flops.get(c.id, 0),
        )
        rows.append(row)
        if n_layers > 1:
            per_layer = {
                name: getattr(row, name) // n_layers
                for name in ("flops", "transcendentals", "bytes_accessed", "output_bytes", "rng_flops")
            }
            per_layer.update(
                params_own={},
                params_total={name: [cnt // n_layers, b // n_layers] for name, (cnt, b) in row.params_total.items()},
                backward_flops=None if bwd_flops is None else bwd_flops // n_layers,
                backward_bytes=None if bwd_bytes is None else bwd_bytes // n_layers,
                layers=None,
            )
            for i in range(n_layers):
                rows.append(
                    dataclasses.replace(row, path=f"{text}[layer {i}]", depth=row.depth + 1, layer=i, **per_layer)
                )
    return rows


def _copy(table: dict) -> dict:
    return {k: list(v) for k, v in sorted(table.items())}


def _inputs(call: Call) -> tuple:
    args, kwargs = call.inputs if call.inputs is not None else ((), {})
    kwargs = {k: v for k, v in kwargs.items() if v is not None}  # defaults passed on (flax 0.12's out_sharding=None)
    return (args, kwargs) if kwargs else args


def _leaves(x: object) -> list:
    import jax

    return [v for v in jax.tree.leaves(x) if hasattr(v, "shape") and hasattr(v, "dtype")]
