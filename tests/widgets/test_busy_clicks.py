"""Clicks made while a cell runs, in a real ipykernel: queued at once, applied at the next step.

The kernel is driven with jupyter_client the way a browser drives it: ``execute_request`` for the
cell, and an ipywidgets ``custom`` comm message for the click, sent while the cell is busy.
"""

import importlib.metadata
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client.manager")

#: ipykernel 7 reads a comm's messages in a subshell while a cell runs; before (Colab's 6.17), never.
SUBSHELLS = int(importlib.metadata.version("ipykernel").split(".")[0]) >= 7
needs_subshells = pytest.mark.skipif(
    not SUBSHELLS,
    reason="ipykernel < 7 has no subshells (Colab): clicks wait for the cell to end, see test_..._without_subshells",
)

SETUP = """
import time
import jax.numpy as jnp
from flax import nnx
from nnx_lab.widgets.views import mode_toggle
from nnx_lab.widgets.capture import capture_panel
from nnx_lab.core import compat
model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
panel = mode_toggle(model)  # shows itself
cap_model = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
cap = capture_panel(cap_model) if compat.has("nnx.capture") else panel  # holds it weakly
print("COMM", panel.routing, panel.comm.comm_id, cap.routing, cap.comm.comm_id, sep="|")
"""


@pytest.fixture(scope="module")
def kernel():
    km, kc = jupyter_client.start_new_kernel(kernel_name="python3")
    try:
        kc.execute(SETUP)
        _, routing, comm_id, cap_routing, cap_comm_id = wait_for_stream(kc, "COMM").split("|")
        assert cap_routing == routing
        yield kc, routing, comm_id, cap_comm_id
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def wait_for_stream(kc, marker, acks=None, timeout=60, updates=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["msg_type"] == "comm_msg" and acks is not None:
            data = msg["content"]["data"]
            if data.get("method") == "custom":
                acks.append((time.time(), data["content"]))
            elif data.get("method") == "update" and updates is not None:
                updates.append((time.time(), data.get("state", {})))
        elif msg["msg_type"] == "stream" and marker in msg["content"]["text"]:
            return msg["content"]["text"].strip()
        elif msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
    raise TimeoutError(marker)


def click(kc, comm_id, content, subshell_id=None):
    msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}})
    if subshell_id is not None:  # JupyterLab 4.4+ addresses widget messages to a subshell of its own
        msg["header"]["subshell_id"] = subshell_id
    kc.shell_channel.send(msg)


def frontend_subshell(kc) -> str:
    kc.control_channel.send(kc.session.msg("create_subshell_request", {}))
    reply = kc.control_channel.get_msg(timeout=10)
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]["subshell_id"]


def click_during_loop(kc, loop: str, comm_id, content, subshell_id, updates=None):
    """Run `loop` (a cell that prints STARTED, loops, then prints SEEN ...), click once it is a few
    steps in; returns (the SEEN line, acks, click time, end time)."""
    kc.execute(loop)
    acks = []
    wait_for_stream(kc, "STARTED", acks)  # the cell is busy now
    time.sleep(0.3)  # a few steps in
    clicked = time.time()
    click(kc, comm_id, content, subshell_id)
    seen = wait_for_stream(kc, "SEEN", acks, updates=updates)
    return seen, acks, clicked, time.time()


def test_routing_is_available_with_this_kernel(kernel):
    _, routing, _, _ = kernel
    if SUBSHELLS:
        assert routing == "None"  # ipykernel 7 subshells: the panel reads clicks while a cell runs
    else:
        assert "needs ipykernel 7 subshells" in routing


@needs_subshells
@pytest.mark.parametrize("frontend", ["plain", "subshell"])
def test_a_click_during_a_tracked_loop_applies_between_steps(kernel, frontend):
    kc, _, comm_id, _ = kernel
    subshell_id = frontend_subshell(kc) if frontend == "subshell" else None
    seen, acks, clicked, ended = click_during_loop(
        kc,
        "model.train(); seen = []; print('STARTED', flush=True)\n"
        "for step in panel.track(range(60)):\n"
        "    time.sleep(0.05)\n"
        "    seen.append(model.layers[1].deterministic)\n"
        "print('SEEN', seen.index(True) if True in seen else None, len(seen))",
        comm_id,
        {"type": "mode", "id": 11, "mode": "eval"},
        subshell_id,
    )
    states = [(a["id"], a["state"]) for _, a in acks]
    assert states == [(11, "queued"), (11, "done")]
    assert acks[0][0] - clicked < 2.0 and acks[1][0] < ended  # acknowledged while the cell still ran
    first_eval, steps = map(int, seen.split()[1:])
    assert steps == 60 and 0 < first_eval < 59  # switched between two steps of the same loop


def test_a_click_during_an_untracked_cell_applies_when_it_ends(kernel):
    kc, _, comm_id, _ = kernel
    kc.execute(
        "model.train(); print('STARTED', flush=True)\ntime.sleep(1.5)\nprint('DURING', model.layers[1].deterministic)"
    )
    acks = []
    wait_for_stream(kc, "STARTED", acks)  # the cell is busy now
    click(kc, comm_id, {"type": "mode", "id": 12, "mode": "eval"})
    assert wait_for_stream(kc, "DURING", acks) == "DURING False"  # nothing changed under the running cell
    kc.execute("print('AFTER', model.layers[1].deterministic)")
    assert wait_for_stream(kc, "AFTER", acks) == "AFTER True"
    # With subshells the click is acknowledged as queued at once; without, only when the cell ends.
    assert [(a["id"], a["state"]) for _, a in acks] == [(12, "queued"), (12, "done")][0 if SUBSHELLS else 1 :]


@pytest.mark.skipif(SUBSHELLS, reason="ipykernel 7 reads clicks during a cell (tested above)")
def test_a_click_during_a_tracked_loop_waits_for_the_cell_without_subshells(kernel):
    kc, _, comm_id, _ = kernel
    seen, acks, clicked, ended = click_during_loop(
        kc,
        "model.train(); seen = []; print('STARTED', flush=True)\n"
        "for step in panel.track(range(30)):\n"
        "    time.sleep(0.05)\n"
        "    seen.append(model.layers[1].deterministic)\n"
        "print('SEEN', True in seen, len(seen))",
        comm_id,
        {"type": "mode", "id": 13, "mode": "eval"},
        None,
    )
    assert seen == "SEEN False 30"  # never applied under the running loop
    kc.execute("print('AFTER', model.layers[1].deterministic)")
    assert wait_for_stream(kc, "AFTER", acks) == "AFTER True"  # applied when the cell ended
    assert [(a["id"], a["state"]) for _, a in acks] == [(13, "done")]


@needs_subshells
@pytest.mark.needs_flax("nnx.capture")
@pytest.mark.parametrize("frontend", ["plain", "subshell"])
def test_a_capture_toggle_during_a_loop_applies_at_the_next_call(kernel, frontend):
    kc, _, _, comm_id = kernel
    subshell_id = frontend_subshell(kc) if frontend == "subshell" else None
    updates = []
    seen, acks, clicked, ended = click_during_loop(
        kc,
        "cap.methods = False; seen = []; print('STARTED', flush=True)\n"
        "for step in range(60):\n"
        "    time.sleep(0.05)\n"
        "    cap(jnp.ones((1, 2)))\n"
        "    seen.append(any('__call__' in str(p) for p, _ in nnx.to_flat_state(cap.captured)))\n"
        "print('SEEN', seen.index(True) if True in seen else None, len(seen), all(seen[seen.index(True):]))",
        comm_id,
        {"type": "methods", "on": True, "id": 21},
        subshell_id,
        updates,
    )
    assert [(a["id"], a["state"]) for _, a in acks] == [(21, "queued")]
    assert acks[0][0] - clicked < 2.0
    answered = [t for t, state in updates if state.get("controls", {}).get("answered") == 21]
    assert answered and answered[0] < ended  # applied while the loop still ran, and the browser told
    first, calls, kept = seen.split()[1:]
    assert calls == "60" and 0 < int(first) < 59 and kept == "True"  # method outputs from a call in the loop on
