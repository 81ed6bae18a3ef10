"""The non-finite report widget on the ipywidgets 7 front end, as on Colab: classic Notebook 6.5 in
Chromium (Colab's stack; skipped where Notebook 7 is installed). find_nonfinite's report as a cell's
value draws the verdict naming the culprit and the calls on its path; the saved notebook keeps the
static text beside the widget."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

from . import test_classic_notebook_browser as classic

classic_server, classic_page, pytestmark = classic.classic_server, classic.classic_page, classic.pytestmark
_open, _run_cell = classic._open, classic._run_cell
SHOTS = Path(os.environ.get("NNX_LAB_SHOTS", "/work/shots"))

CELLS = [
    "import jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class Block(nnx.Module):\n"
    "    def __init__(self, rngs, fault=False):\n"
    "        self.linear = nnx.Linear(16, 16, rngs=rngs)\n"
    "        self.fault = fault\n\n"
    "    def __call__(self, x):\n"
    "        h = self.linear(x)\n"
    "        return x + jnp.tanh(jnp.log(h) if self.fault else h)\n\n"
    "model = nnx.Sequential(*[Block(nnx.Rngs(i), fault=i == 2) for i in range(4)])\n"
    "x = jnp.linspace(-1, 1, 8 * 16).reshape(8, 16)",
    "nnx_lab.find_nonfinite(lambda m, x: m(x).mean(), model, x)",
]


def test_nonfinite_widget_in_the_classic_notebook(classic_server, classic_page, page_events):
    page = classic_page
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    path = "nonfinite.ipynb"
    nbformat.write(nb, classic_server.root_dir / path)
    _open(page, classic_server, path)
    for i in range(len(CELLS)):
        _run_cell(page, i)
    root = page.locator(".output_area .nnx-lab-nonfinite-view").first
    root.locator("tr.culprit").wait_for(state="visible")
    verdict = root.locator(".nnx-nf-verdict").inner_text()
    assert verdict == "the forward pass first produced NaN/Inf in layers.2 (Block.__call__)", verdict
    assert root.locator("tr.culprit td").first.inner_text() == "layers.2"
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / "nonfinite-classic.png"))
    assert not page_events.page_errors, page_events.page_errors

    page.evaluate("() => Jupyter.notebook.save_notebook()")
    page.wait_for_function("() => !Jupyter.notebook.dirty", timeout=30_000)
    saved = nbformat.read(classic_server.root_dir / path, as_version=4)
    (out,) = [o for o in saved.cells[2].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert "layers.2 (Block.__call__)" in out["data"]["text/plain"]
