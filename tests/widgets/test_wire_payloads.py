"""What Python sends a front end is what widgets/wire.py's TypedDicts say (the types the front end is
type-checked against, through the generated js/src/shared/wire.d.ts): every key a message carries is
declared, every required one is there, and each value has its declared type."""

from __future__ import annotations

import types
import typing

import jax.numpy as jnp
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.widgets import wire

BY_TYPE = {typing.get_args(typing.get_type_hints(c)["type"])[0]: c for c in wire.TO_BROWSER}


def _matches(value, hint) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any:
        return True
    if hint is type(None) or hint is None:
        return value is None
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items())
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint)


def problems(msg: dict) -> list[str]:
    """Why `msg` is not what its TypedDict says (empty: it is)."""
    cls = BY_TYPE.get(msg.get("type"))
    if cls is None:
        return [f"no TypedDict for type {msg.get('type')!r}"]
    hints = typing.get_type_hints(cls)
    out = [f"{cls.__name__} lacks {k!r}" for k in sorted(cls.__required_keys__ - msg.keys())]
    out += [f"{cls.__name__} has undeclared {k!r}" for k in sorted(msg.keys() - hints.keys())]
    out += [
        f"{cls.__name__}.{k} = {msg[k]!r} is no {hints[k]}"
        for k in msg.keys() & hints.keys()
        if not _matches(msg[k], hints[k])
    ]
    return out


def test_the_checker_sees_a_wrong_message():
    assert problems({"type": "ack", "id": 1, "state": "done"}) == []
    assert problems({"type": "ack", "id": 1, "state": "finished", "txt": ""}) == [
        "Ack has undeclared 'txt'",
        "Ack.state = 'finished' is no typing.Literal['queued', 'done', 'error']",
    ]
    assert problems({"type": "history", "stat": "mean"}) == [
        f"History lacks {k!r}" for k in ("length", "refresh", "rows", "structure")
    ]


def test_the_viewer_sends_what_wire_declares():
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.BatchNorm(4, rngs=nnx.Rngs(0)))
    viewer = nnx_lab.watch(model, display=False)
    sent = []
    viewer.send = lambda msg, buffers=None: sent.append(msg)
    for step in range(3):
        viewer.log(loss=jnp.float32(1.0 / (step + 1)))
        viewer.refresh()
    viewer.watcher.wait()
    for request in (
        {"type": wire.STATS},
        {"type": wire.HISTORY, "stat": "mean"},
        {"type": wire.SCALARS},
        {"type": wire.REFRESH, "id": "refresh-1"},
        {"type": wire.COMPARE_TO, "source": "stats", "id": 7},
        {"type": wire.COMPARE_TO, "source": "path", "path": "/no/such/dir", "id": 8},
        {"type": wire.COMPARE_TO, "source": "none", "id": 9},
    ):
        viewer._on_message(viewer, request, [])
    viewer.close()
    kinds = {m["type"] for m in sent}
    assert {wire.STATS, wire.HISTORY, wire.SCALARS, wire.ACK, wire.SINCE} <= kinds, kinds
    assert any(m["type"] == wire.SINCE and m["values"] for m in sent)  # a pinned baseline's changes
    assert any(m["type"] == wire.ACK and m["state"] == "error" and m.get("message") for m in sent)
    assert [p for m in sent for p in problems(m)] == []


@pytest.mark.needs_flax("nnx.view")
def test_the_views_panel_acks_what_wire_declares():
    model = nnx.Dropout(0.5, rngs=nnx.Rngs(0))
    panel = nnx_lab.ViewPanel(model, namespace={"model": model})
    acks = []
    panel.send = acks.append
    panel._on_message(panel, {"type": wire.MODE, "mode": "eval", "id": 1}, [])
    panel._on_message(panel, {"type": wire.MODE, "mode": "sideways", "id": 2}, [])
    assert [a["state"] for a in acks] == ["done", "error"], acks
    assert [p for a in acks for p in problems(a)] == []
