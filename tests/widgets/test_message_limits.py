"""Browser messages: oversized or malformed ones are refused in one short line; nothing is echoed at length."""

import json

import pytest
from flax import nnx
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab.core import compat


def model():
    return nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))


def sent(widget):
    out = []
    widget.send = lambda content, buffers=None: out.append(content)
    return out


HOSTILE = [
    {"type": "apply", "id": 1, "only": None, "values": {"x" * 1_000_000: True}},  # a 1 MB option name
    {"type": "apply", "id": 2, "only": {"path": [f"p{i}" for i in range(100_000)]}, "values": {}},
    {"type": "apply", "id": 3, "only": None, "values": {f"o{i}": True for i in range(10_000)}},
    {"type": "view", "id": 4, "only": None, "values": {"deterministic": True}, "name": "n" * 100_000},
]


@pytest.mark.skipif(not compat.has("nnx.view"), reason=f"needs flax>={compat.needed('nnx.view')}")
@pytest.mark.parametrize("content", HOSTILE)
def test_view_panel_refuses_huge_messages_without_echoing_them(content):
    m = model()
    before = frozen(m)
    namespace = {"m": m}
    panel = nnx_lab.ViewPanel(m, namespace=namespace)
    acks = sent(panel)
    panel._on_message(panel, content, [])
    ack = acks[-1]
    assert ack["state"] == "error" and ack["id"] == content["id"]
    assert len(json.dumps(ack)) < 400 and "refused" in ack["text"]
    assert_unchanged(m, before) and namespace == {"m": m}


@pytest.mark.skipif(not compat.has("nnx.view"), reason=f"needs flax>={compat.needed('nnx.view')}")
def test_view_panel_errors_quote_user_text_briefly():
    m = model()
    panel = nnx_lab.ViewPanel(m, namespace={})
    acks = sent(panel)
    panel._on_message(panel, {"type": "apply", "id": "x" * 1000, "only": None, "values": {"o" * 20_000: True}}, [])
    ack = acks[-1]
    assert ack["state"] == "error" and len(ack["text"]) <= 300
    assert ack["id"] == "x" * 200 + "… (800 more characters)"  # echoed, bounded


@pytest.mark.skipif(not compat.has("nnx.capture"), reason=f"needs flax>={compat.needed('nnx.capture')}")
@pytest.mark.parametrize(
    "content",
    [
        {"type": "modules", "id": 1, "on": True, "paths": [f"p{i}" for i in range(100_000)]},
        {"type": "type", "id": 2, "on": True, "name": "T" * 1_000_000},
        {"type": "module", "id": 3, "on": True, "path": "p" * 20_000},
        ["not", "an", "object"],
    ],
)
def test_capture_panel_status_stays_short(content):
    m = model()
    panel = nnx_lab.capture_panel(m, display=False)
    panel._on_message(panel, content, [])
    assert panel.status["level"] == "error" and len(panel.status["message"]) <= 300
    assert len(json.dumps(panel.controls)) < 20_000


def test_viewer_ignores_huge_messages():
    m = model()
    viewer = nnx_lab.watch(m, display=False, stats=False)
    refreshes = viewer._watcher.refreshes
    viewer._on_message(viewer, {"type": "refresh", "pad": "x" * 100_000}, [])
    assert viewer._watcher.refreshes == refreshes
    viewer._on_message(viewer, {"type": "refresh"}, [])
    assert viewer._watcher.refreshes == refreshes + 1


@pytest.mark.parametrize(
    "rid, echoed",
    [
        (7, 7),
        ("req-7", "req-7"),
        ({"req": 7, "tab": "a"}, '{"req": 7, "tab": "a"}'),  # an object id: its JSON text
        (list(range(10_000)), None),  # a 10,000-element list: quoted to 200 characters
        (True, "true"),
    ],
)
def test_an_answer_echoes_any_id_bounded(rid, echoed):
    viewer = nnx_lab.watch(model(), display=False, stats=False)
    acks = sent(viewer)
    viewer._on_message(viewer, {"type": "compare_to", "source": "none", "id": rid}, [])
    (ack,) = [a for a in acks if a.get("type") == "ack"]
    if echoed is None:
        text = json.dumps(rid)
        assert ack["id"] == f"{text[:200]}… ({len(text) - 200:,} more characters)"
    else:
        assert ack["id"] == echoed
    assert len(json.dumps(ack)) < 600
    viewer.close()
