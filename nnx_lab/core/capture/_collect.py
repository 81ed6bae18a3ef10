"""Values out of, and into, an armed module's ``__captures__`` entries: what a capture collects when it
disarms, and what :meth:`~._capture.Capture.absorb` adds from a capture made on a copy of the model."""

from __future__ import annotations

from typing import Sequence

from flax import nnx
from flax.typing import PathParts

from ._arming import MARKERS, MethodOutputs, armed_entries, concat

__all__ = ["absorb", "collect"]


def collect(path: PathParts, entries: tuple, sown_types: Sequence[type]) -> list[tuple[PathParts, nnx.Variable]]:
    """One (path, Variable) per sow name. A method output kept apart (its type is not chosen
    for sows) whose name a chosen sow also uses is keyed ``name()``, so neither hides the other."""
    out: dict[PathParts, nnx.Variable] = {}
    methods = []
    for var in entries:
        if type(var) is MethodOutputs:
            methods.append(var)
        elif type(var) not in MARKERS and type(var) in sown_types:
            for key, value in dict(var.get_value()).items():
                out[(*path, key)] = type(var)(value)
    for var in methods:
        kind = var.get_metadata()["output_type"]
        for key, value in dict(var.get_value()).items():
            at = (*path, key) if (*path, key) not in out else (*path, f"{key}()")
            out[at] = kind(value)
    return list(out.items())


def absorb(
    state: nnx.State,
    modules: dict[PathParts, nnx.Module],
    types: Sequence[type],
    sown_types: Sequence[type],
    seen: list[type],
    seen_types: Sequence[type] = (),
) -> None:
    """Add ``state``'s values to the armed ``modules`` (path -> module, the selected ones) as if sown
    there: tuples appended, anything else replacing; only values of ``types``. ``seen`` (the capture's
    types seen) gains ``seen_types`` and every type absorbed."""
    seen.extend(t for t in seen_types if t not in seen)
    for path, var in nnx.to_flat_state(state):
        module = modules.get(tuple(path[:-1]))
        if module is None or type(var) not in types:
            continue
        # Into the entry that would have taken it here: its type's own, else method outputs'.
        sink = type(var) if type(var) in sown_types else MethodOutputs
        for entry in armed_entries(module):
            if type(entry) is sink:
                key = path[-1]
                entry[key] = concat(entry[key], var.get_value()) if key in entry else var.get_value()
                if type(var) not in seen:
                    seen.append(type(var))
