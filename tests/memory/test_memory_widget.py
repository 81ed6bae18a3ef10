"""The memory widget (MemoryView): its payload is the ledger as a tree device -> holder -> group with
Python's byte texts, bars against the device's limit (CPU: its live arrays), "shared with" notes and
the freeing statements; a Ledger displayed in a kernel is the widget with its static copies, text
elsewhere; %nnx_memory in a kernel shows the widget."""

import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.memory import DeviceTotal, Freeing, Ledger, Row
from nnx_lab.widgets import memory as memory_widget
from nnx_lab.widgets.memory import MemoryView

WIDGET = "application/vnd.jupyter.widget-view+json"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture
def namespace():
    model = nnx.Linear(64, 64, rngs=nnx.Rngs(0))  # 16,640 bytes of Param
    ns = {
        "model": model,
        "optimizer": nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param),
        "grads_old": {"w": jnp.ones((256, 256))},  # 262,144 bytes
        "Out": {3: model},
    }
    ns["alias"] = ns["grads_old"]
    yield ns
    ns.clear()


def _rows(payload):
    return {(r["depth"], r["label"]): r for r in payload["rows"]}


def test_the_payload_is_a_tree_of_devices_holders_and_groups(namespace):
    ledger = nnx_lab.memory(namespace=namespace)
    view = MemoryView(ledger)
    payload = view.ledger
    rows = payload["rows"]
    assert rows[0]["depth"] == 0 and rows[0]["label"] == "cpu:0"
    device = ledger.devices[0]
    assert rows[0]["bytes"] == device.ledger_bytes == device.live_bytes
    assert payload["devices"][0]["line"].startswith("cpu:0: ledger ")
    by = _rows(payload)
    assert by[(1, "grads_old")]["bytes"] == 262_144 and by[(1, "grads_old")]["bytes_text"] == "256.0 KiB"
    assert by[(1, "grads_old")]["shared"] == "shared with alias"
    assert by[(1, "alias")]["shared"] == "256.0 KiB shared with grads_old (counted there)"
    assert by[(1, "model")]["bytes"] == 16_640 and by[(1, "model")]["shared"] == "shared with Out[3]"
    assert by[(1, "optimizer")]["kind"] == "optimizer"
    labels = [r["label"] for r in rows]
    opt = labels.index("optimizer")
    assert {"mu", "nu"} <= set(labels[opt + 1 : opt + 5])  # its groups follow it, one level down
    assert all(r["depth"] == 2 for r in rows[opt + 1 : opt + 5])
    # CPU has no limit: a bar is the row's share of the device's live arrays
    assert by[(1, "grads_old")]["share"] == pytest.approx(262_144 / device.live_bytes)
    assert "no limit on this backend" in payload["devices"][0]["scale_text"]
    statements = {f["statement"]: f for f in payload["freeing"]}
    assert statements["del grads_old; del alias"]["bytes_text"] == "returns 256.0 KiB"
    assert statements["del model; Out.pop(3, None)"]["bytes"] == 16_640
    view.close()


def test_bars_are_against_the_devices_limit_where_memory_stats_has_one():
    stats = {"bytes_in_use": 3 << 30, "peak_bytes_in_use": 5 << 30, "bytes_limit": 16 << 30}
    ledger = Ledger(
        rows=(
            Row("params", "pytree", "array", "gpu:0", 2, 2 << 30),
            Row(HOSTILE, "pytree", "array", "gpu:0", 1, 1 << 30),
        ),
        devices=(DeviceTotal("gpu:0", 0, 3, 3 << 30, 3 << 30, stats),),
        freeing=(Freeing(("params",), "del params", 2 << 30),),
        holders=("params", HOSTILE),
    )
    view = MemoryView(ledger)
    by = _rows(view.ledger)
    assert by[(1, "params")]["share"] == pytest.approx(2 / 16)
    assert by[(0, "gpu:0")]["share"] == pytest.approx(3 / 16)
    assert view.ledger["devices"][0]["scale_text"] == "16.0 GiB limit"
    assert "limit 16.0 GiB" in view.ledger["devices"][0]["line"]
    assert by[(1, HOSTILE)]["label"] == HOSTILE  # plain data: the front end writes it as text
    bundle = view._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert WIDGET in data and data["text/plain"] == ledger.to_text()
    assert HOSTILE not in data["text/html"] and "&lt;img" in data["text/html"]  # escaped in the saved copy
    view.close()


def test_top_limits_the_holders_and_says_how_many_are_left(namespace):
    # 64 MiB: the biggest holder whatever earlier tests of this process left unreached
    namespace["grads_old"] = namespace["alias"] = {"w": jnp.ones((4096, 4096))}
    ledger = nnx_lab.memory(namespace=namespace)
    view = MemoryView(ledger.select(top=1))
    holders = [r["label"] for r in view.ledger["rows"] if r["depth"] == 1]
    assert holders == ["grads_old"]
    others = len({r.holder for r in ledger.rows}) - 1  # model, optimizer, alias, Out[3] (and any unreached)
    assert view.ledger["left"].startswith(f"… {others} smaller holders not shown")
    view.close()
    with pytest.raises(TypeError, match="shows a Ledger"):
        MemoryView("not a ledger")


def test_a_ledger_shows_the_widget_only_in_a_kernel(namespace, monkeypatch):
    ledger = nnx_lab.memory(namespace=namespace)
    assert memory_widget.widgets_work() is False  # pytest: no kernel
    assert ledger._repr_mimebundle_() is None  # IPython then shows the text and the static HTML
    monkeypatch.setattr(memory_widget, "widgets_work", lambda: True)
    data = ledger._repr_mimebundle_()
    assert WIDGET in data and data["text/plain"] == ledger.to_text() and "<table>" in data["text/html"]


def test_a_ledger_shows_the_widget_in_marimo(namespace):
    """marimo asks ``_display_()`` (tests/browser/test_marimo_browser.py draws it): the widget of this ledger."""
    ledger = nnx_lab.memory(namespace=namespace)
    view = ledger._display_()
    assert isinstance(view, MemoryView) and view.result is ledger
    assert view.ledger["title"] == ledger.to_text().splitlines()[0]
    view.close()


def test_the_magic_shows_the_widget_in_a_kernel(ip, namespace, monkeypatch):
    shown = []
    monkeypatch.setattr(memory_widget, "widgets_work", lambda: True)

    class Shown(MemoryView):  # each view the magic makes, recorded as it is made (then displayed)
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            shown.append(self)

    monkeypatch.setattr(memory_widget, "MemoryView", Shown)
    ip.user_ns.update(model=namespace["model"], grads_old=namespace["grads_old"])
    ip.run_line_magic("nnx_memory", "grads_old --top 3")
    (view,) = shown
    assert isinstance(view, MemoryView)
    assert [r["label"] for r in view.ledger["rows"] if r["depth"] == 1] == ["grads_old"]
    view.close()
