"""The summary widget on the ipywidgets 7 front end, as on Colab: classic Notebook 6.5 in Chromium
(Colab's stack; skipped where Notebook 7 is installed). Rows, sort by FLOPs, filter, fold, the
peak memory arriving from the background compile, and the static HTML a saved notebook keeps."""

from __future__ import annotations

import time

import nbformat

from . import test_classic_notebook_browser as classic
from .conftest import _screenshot

# The classic notebook's server, page and marks (Colab's stack only), shared with its own test.
classic_server, classic_page, pytestmark = classic.classic_server, classic.classic_page, classic.pytestmark
_open, _run_cell = classic._open, classic._run_cell

CELLS = [
    "import jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class Block(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.up = nnx.Linear(8, 32, rngs=rngs)\n"
    "        self.down = nnx.Linear(32, 8, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        return x + self.down(nnx.relu(self.up(x)))\n\n"
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.embed = nnx.Linear(4, 8, rngs=rngs)\n"
    "        self.block = Block(rngs)\n"
    "        self.head = nnx.Linear(8, 2, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        return self.head(self.block(self.embed(x)))\n\n"
    "model = Net(nnx.Rngs(0))",
    "%nnx_summary model (3, 4) --as s",
]
ROW = "tr.nnx-sum-row"
CALL_ORDER = ["(Net)", "embed", "block", "block.up", "block.down", "head"]


def paths(root):
    return root.locator(ROW).evaluate_all("rows => rows.map(r => r.dataset.path)")


def settled_paths(root, expected, timeout_s=30.0):
    """The rows once they read ``expected`` (or what they read at the timeout): the display is
    updated when the peak memory arrives, and the classic notebook then draws the widget anew, its
    rows empty for a moment."""
    deadline = time.monotonic() + timeout_s
    while (got := paths(root)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def test_summary_widget_in_the_classic_notebook(classic_server, classic_page, page_events):
    page = classic_page
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    path = "summary.ipynb"
    nbformat.write(nb, classic_server.root_dir / path)
    _open(page, classic_server, path)
    for i in range(len(CELLS)):
        _run_cell(page, i)
    root = page.locator(".output_area .nnx-lab-summary-view").first
    root.locator(ROW).first.wait_for(state="visible")
    assert settled_paths(root, CALL_ORDER) == CALL_ORDER
    root.locator(".nnx-sum-head").get_by_text("Peak memory per device").wait_for(timeout=60_000)
    # The display update that follows (the saved copy's peak memory) draws the widget anew: once the
    # output holds it, the view on the page is the one the clicks below reach.
    page.wait_for_function(
        """() => Jupyter.notebook.get_cell(2).output_area.outputs.some(
            o => ((o.data || {})["text/html"] || "").includes("Peak memory per device"))""",
        timeout=30_000,
    )
    assert settled_paths(root, CALL_ORDER) == CALL_ORDER

    root.locator('th[data-col="flops"]').click()  # costliest first among siblings
    assert paths(root) == ["(Net)", "block", "block.up", "block.down", "embed", "head"]
    root.locator("input.nnx-sum-filter").fill("down")
    assert paths(root) == ["(Net)", "block", "block.down"]
    root.locator("input.nnx-sum-filter").fill("")
    root.locator(f'{ROW}[data-path="block"] td.c-path').click()
    assert paths(root) == ["(Net)", "block", "embed", "head"]
    _screenshot(page, "summary-classic", scroll_to=root)
    assert not page_events.page_errors, page_events.page_errors

    # Saved: the widget's output keeps the static table, the peak memory in it (the display was updated).
    page.evaluate("() => Jupyter.notebook.save_notebook()")
    page.wait_for_function("() => !Jupyter.notebook.dirty", timeout=30_000)
    saved = nbformat.read(classic_server.root_dir / path, as_version=4)
    outputs = [o for o in saved.cells[2].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(outputs) == 1
    assert (
        "Peak memory per device" in outputs[0]["data"]["text/html"] and "block.down" in outputs[0]["data"]["text/html"]
    )
