"""Two headers at 800 px in JupyterLab say what is true: the view panel's "train" badge beside how many
modules decide their mode at call time, and a checkpoint viewer's device strip "on disk (<bytes>)"
instead of the kernel's "cpu · cpu × 1" (its arrays are files)."""

from __future__ import annotations

import re

from .pages import set_output_width
from .test_quickstart_browser import write_notebook

SETUP = (
    "import os, tempfile\nimport orbax.checkpoint as ocp\nfrom flax import nnx\nimport nnx_lab",
    # one module set to train, three decided at call time (None)
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.drop = nnx.Dropout(0.1, deterministic=None, rngs=rngs)\n"
    "        self.bn = nnx.BatchNorm(4, use_running_average=None, rngs=rngs)\n"
    "        self.linear = nnx.Linear(4, 4, rngs=rngs)\n"
    "        self.attn = nnx.MultiHeadAttention(2, 4, decode=False, rngs=rngs)\n"
    "        self.drop2 = nnx.Dropout(0.2, deterministic=False, rngs=rngs)\n"
    "model = Net(nnx.Rngs(0))\n"
    "nnx_lab.view_panel(model)",
    "path = os.path.join(tempfile.mkdtemp(), 'ckpt')\n"
    "with ocp.StandardCheckpointer() as c:\n"
    "    c.save(path, nnx.state(model))\n"
    "snap = nnx_lab.snapshot(path, progress=False)\n"
    "print('DISK', nnx_lab.core.render.format_bytes(snap.checkpoint['disk_bytes']))\n"
    "nnx_lab.watch(path)",
)


def test_the_headers_say_the_call_time_modules_and_on_disk(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "headers.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)

    views = page.locator('.jp-OutputArea-output .nnx-lab-views[data-variant="views"]').first
    views.locator(".nnx-views-instance").first.wait_for(state="visible", timeout=30_000)
    assert set_output_width(page, views, 800) == 800
    head = views.locator(".nnx-views-head")
    assert views.locator(".nnx-views-mode").inner_text() == "train"
    assert views.locator(".nnx-views-count").inner_text() == "4 modules with set_view, 3 decided at call time"
    box = head.bounding_box()
    assert box is not None and box["width"] <= 800
    screenshot(page, "lab-800-views-header-call-time", scroll_to=views)

    disk = next(
        line.split(" ", 1)[1]
        for line in page.locator(".jp-OutputArea-output").all_inner_texts()
        for line in line.splitlines()
        if line.startswith("DISK ")
    )
    viewer = page.locator(".jp-OutputArea-output .nnx-lab-viewer").first
    viewer.locator(".nnx-row").first.wait_for(state="visible", timeout=30_000)
    viewer.locator(".nnx-status .msg").get_by_text("statistics read").wait_for(timeout=60_000)
    strip = viewer.locator(".nnx-devices").inner_text()
    assert strip == f"on disk ({disk})", strip
    assert not re.search(r"\bcpu\b", viewer.locator(".nnx-devices").inner_text())
    screenshot(page, "lab-800-checkpoint-viewer-on-disk", scroll_to=viewer)
    assert not page_events.page_errors, page_events.page_errors
