"""The capture report's messages for the user: what was sown but not chosen, a filter that matched
nothing, tracers instead of values, calls that went to the user's own ``nnx.capture``."""

from __future__ import annotations

from typing import Sequence

from .. import render
from ..graph import Path
from ._arming import MARKERS
from ._table import Table
from ._types import type_names

__all__ = ["inside_own_note", "messages"]


def messages(
    table: Table,
    grads: Table | None,
    types: tuple[type, ...],
    seen: tuple[type, ...],
    matched: Sequence[Path] | None,
    only_text: str,
    inside_own: int = 0,
) -> list[str]:
    chosen = ", ".join(type_names(types))
    shown = set(types) | ({r.type for r in grads.snapshot.rows} if grads is not None else set())
    others = [t for t in seen if t not in MARKERS and t not in types and t.__name__ not in shown]
    messages = []
    if inside_own:
        messages.append(inside_own_note(inside_own))
    if matched is not None and not matched:
        messages.append(f"{only_text} matched no module, so nothing was captured")
    elif not table.snapshot.rows and inside_own and not others:
        pass  # the note says where the values went
    elif not table.snapshot.rows:
        if others:
            messages.append(
                f"nothing was sown under {chosen}; sown instead: {', '.join(type_names(others))} "
                "(choose those types to capture them)"
            )
        elif grads is not None and grads.snapshot.rows:
            # perturb() was called (its gradients are below): only sow() was not.
            messages.append(
                f"nothing was sown under {chosen}: no module called sow() during the capture; "
                "the perturb() points are the gradients"
            )
        else:
            messages.append(
                f"nothing was sown under {chosen}: no module called sow() or perturb() "
                "during the capture (record method outputs instead?)"
            )
    elif others:
        messages.append(f"also sown but not chosen: {', '.join(type_names(others))}")
    traced = [r for r in table.snapshot.rows if r.status == "tracer"]
    if traced:
        where = traced[0].path_text + (", …" if len(traced) > 1 else "")
        messages.append(
            f"{render.count_noun(len(traced), 'value')} ({where}) sown under a jax transformation of "
            "a function that closes over the model: tracers, not values. Pass the model to an "
            "nnx.jit function instead (or call it outside the transformation)"
        )
    if grads is not None and not grads.snapshot.rows:
        messages.append("no gradients: no module called perturb()")
    return messages


def inside_own_note(calls: int) -> str:
    """The report's line for calls that ran inside the user's own ``nnx.capture``.

    >>> inside_own_note(1)
    "1 call ran inside your own nnx.capture: what it sowed went to that capture's result, not here"
    """
    whose = "it" if calls == 1 else "they"
    return (
        f"{render.count_noun(calls, 'call')} ran inside your own nnx.capture: what {whose} sowed went to that "
        "capture's result, not here"
    )
