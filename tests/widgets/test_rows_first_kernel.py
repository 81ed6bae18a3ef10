"""``watch(model, rows_first=True)`` in a real ipykernel shows the rows at once and the statistics when their kernels
have compiled and run; the output the notebook saves (its ``text/html`` copy, what a reader without
the kernel sees) is updated under the same display id once the statistics are in."""

import os
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client.manager")

WATCH = """
from flax import nnx
import nnx_lab
model = nnx.Sequential(nnx.Linear(7, 13, rngs=nnx.Rngs(0)), nnx.Linear(13, 3, rngs=nnx.Rngs(1)))
viewer = nnx_lab.watch(model, rows_first=True)
print(f"ROWS-FIRST {viewer._first is not None}")  # one write: the kernel may flush between print's parts
"""


def outputs(kc, cell, timeout=120):
    """The cell's display outputs by display id, updates applied as a front end applies them; and
    whether the rows-first path ran. Waits (after the cell) until an update arrives or 10 s pass."""
    shown, updated, rows_first = {}, [], None
    kc.execute(cell)
    deadline, idle_at = time.time() + timeout, None
    while time.time() < deadline:
        if idle_at is not None and (updated or time.time() > idle_at + 10):
            break
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Exception:  # queue.Empty
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "error":
            raise AssertionError("\n".join(content["traceback"]))
        if kind == "stream" and "ROWS-FIRST" in content["text"]:
            rows_first = "True" in content["text"]
        if kind == "execute_result":  # the cell's value, shown as its Out[n]
            shown["execute_result"] = content["data"]
        if kind in ("display_data", "update_display_data"):
            display_id = content.get("transient", {}).get("display_id")
            if kind == "display_data":
                shown[display_id] = content["data"]
            elif display_id in shown:
                shown[display_id] = content["data"]
                updated.append(display_id)
        if (
            kind == "status"
            and content["execution_state"] == "idle"
            and msg["parent_header"].get("msg_type") == "execute_request"
        ):
            idle_at = time.time()
    return shown, updated, rows_first


def check(shown, rows_first):
    assert rows_first is True  # this kernel takes widget messages from threads
    ((display_id, data),) = [(k, v) for k, v in shown.items() if "text/html" in v]
    assert display_id is not None  # shown with a display id, so it can be updated
    assert "application/vnd.jupyter.widget-view+json" in data
    assert ">norm</th>" in data["text/html"]  # the saved copy has the statistics
    assert data["text/plain"].startswith("StateViewer · Sequential")


def test_watch_shows_rows_first_and_the_saved_copy_gets_the_statistics():
    env = dict(os.environ, NNX_LAB_CACHE_DIR="off")  # a cold first look: the statistics must compile
    km, kc = jupyter_client.start_new_kernel(kernel_name="python3", env=env)
    try:
        cold = outputs(kc, WATCH)  # compiles: shown with the rows, updated with the statistics
        warm = outputs(kc, WATCH)  # compiled: the statistics may arrive before or while it is shown
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    check(cold[0], cold[2])
    assert cold[1], "the saved copy was never updated with the statistics"
    check(warm[0], warm[2])


AUTO = """
from flax import nnx
import nnx_lab
from nnx_lab.widgets import viewer as viewer_module
viewer_module.ROWS_FIRST_ABOVE = 3  # stands for the 2,000 Variables of a big model
big = nnx.Sequential(nnx.Linear(7, 13, rngs=nnx.Rngs(0)), nnx.Linear(13, 3, rngs=nnx.Rngs(1)))  # 4 Variables
small = nnx.Linear(2, 3, rngs=nnx.Rngs(0))  # 2 Variables
big_viewer = nnx_lab.watch(big)
small_viewer = nnx_lab.watch(small)
print("ROWS-FIRST", big_viewer._first is not None and small_viewer._first is None)
"""


def test_by_default_a_big_model_shows_rows_first_and_a_small_one_with_its_statistics():
    km, kc = jupyter_client.start_new_kernel(kernel_name="python3", env=dict(os.environ))
    try:
        shown, _, both = outputs(kc, AUTO)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert both is True  # the big one went rows first, the small one did not
    small = [v for v in shown.values() if "text/html" in v and v["text/plain"].startswith("StateViewer · Linear")]
    assert small and ">norm</th>" in small[0]["text/html"]  # shown with its numbers


LAST_LINE = """
from flax import nnx
import nnx_lab
model = nnx.Sequential(nnx.Linear(7, 13, rngs=nnx.Rngs(0)), nnx.Linear(13, 3, rngs=nnx.Rngs(1)))
print("ROWS-FIRST True")
nnx_lab.watch(model, rows_first=True)
"""


def test_watch_as_a_cells_last_line_draws_one_viewer_and_a_later_display_draws_it_again():
    # watch() displays its viewer and returns it: as the cell's value the same widget was drawn a
    # second time (an execute_result beside the display_data); a later cell's display(viewer) still draws it.
    views = []
    km, kc = jupyter_client.start_new_kernel(kernel_name="python3", env=dict(os.environ))
    try:
        shown, updated, _ = outputs(kc, LAST_LINE)
        kc.execute("viewer = _\nviewer")  # a later cell's value: drawn
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                msg = kc.get_iopub_msg(timeout=1)
            except Exception:  # queue.Empty
                continue
            if msg["msg_type"] in ("display_data", "execute_result"):
                views.append(msg["msg_type"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                if msg["parent_header"].get("msg_type") == "execute_request":
                    break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    widget_outputs = [v for v in shown.values() if "application/vnd.jupyter.widget-view+json" in v]
    assert len(widget_outputs) == 1  # one view (its display id updated in place), not two
    assert updated  # the saved copy still gets the statistics under that display id
    assert views == ["execute_result"]
