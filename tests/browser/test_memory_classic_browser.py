"""The memory widget on the ipywidgets 7 front end, as on Colab: classic Notebook 6.5 in Chromium
(Colab's stack; skipped where Notebook 7 is installed). A ledger as a cell's value draws the tree with
every holder's name, the freeing statements, a sort and a fold; the saved notebook keeps the static
table beside the widget."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

from . import test_classic_notebook_browser as classic

classic_server, classic_page, pytestmark = classic.classic_server, classic.classic_page, classic.pytestmark
_open, _run_cell = classic._open, classic._run_cell
SHOTS = Path(os.environ.get("NNX_LAB_SHOTS", "/work/shots"))

CELLS = [
    "import jax.numpy as jnp, optax\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "model = nnx.Linear(64, 256, rngs=nnx.Rngs(0))\n"
    "optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)\n"
    "grads_old = {'w': jnp.ones((256, 256))}",
    "nnx_lab.memory()",
]
ROW = "tr.nnx-mem-row"


def labels(root):
    return root.locator(ROW).evaluate_all("rows => rows.map(r => r.dataset.label)")


def test_memory_widget_in_the_classic_notebook(classic_server, classic_page, page_events):
    page = classic_page
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    path = "memory.ipynb"
    nbformat.write(nb, classic_server.root_dir / path)
    _open(page, classic_server, path)
    for i in range(len(CELLS)):
        _run_cell(page, i)
    root = page.locator(".output_area .nnx-lab-memory-view").first
    root.locator(ROW).first.wait_for(state="visible")
    shown = labels(root)
    assert shown[:3] == ["cpu:0", "grads_old", "array"] and "optimizer" in shown and "model" in shown, shown
    statements = root.locator("li.nnx-mem-freeing code").all_inner_texts()
    assert statements[:2] == ["del grads_old", "del optimizer"], statements
    root.locator('th[data-col="label"]').click()  # names A-Z among siblings
    holders = [s for s in labels(root) if s in ("grads_old", "model", "optimizer")]
    assert holders == ["grads_old", "model", "optimizer"], holders
    root.locator(f'{ROW}[data-label="optimizer"] td.c-label').click()
    assert "mu" not in labels(root)
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / "memory-classic.png"))
    assert not page_events.page_errors, page_events.page_errors

    page.evaluate("() => Jupyter.notebook.save_notebook()")
    page.wait_for_function("() => !Jupyter.notebook.dirty", timeout=30_000)
    saved = nbformat.read(classic_server.root_dir / path, as_version=4)
    (out,) = [o for o in saved.cells[2].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert "grads_old" in out["data"]["text/html"] and "del grads_old" in out["data"]["text/plain"]
