"""The viewer after a kernel restart in the classic Notebook 6.5 (ipywidgets 7's front end, as on
Colab's stack): the status says "disconnected: the kernel restarted; run the cell again" and
"refresh now" stops, as in JupyterLab (tests/browser/test_viewer_restart_browser.py)."""

from __future__ import annotations

import nbformat

from .test_classic_notebook_browser import _open, _run_cell, pytestmark  # noqa: F401
from .test_classic_notebook_browser import classic_page as classic_page  # the fixtures
from .test_classic_notebook_browser import classic_server as classic_server

STATE = "() => { const s = document.querySelector('.nnx-lab-viewer .nnx-status'); return s && s.dataset.state; }"


def test_a_kernel_restart_disconnects_the_viewer_in_the_classic_notebook(classic_server, classic_page):
    page = classic_page
    cells = [
        "from flax import nnx\nimport nnx_lab",
        "model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\nviewer = nnx_lab.watch(model)",
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
                   classic_server.root_dir / "restart.ipynb")  # fmt: skip
    _open(page, classic_server, "restart.ipynb")
    for i in range(len(cells)):
        _run_cell(page, i)
    page.wait_for_function(f"() => ({STATE})() === 'live'", timeout=30_000)
    page.evaluate("() => Jupyter.notebook.kernel.restart()")  # what Kernel > Restart does once confirmed
    page.wait_for_function(f"() => ({STATE})() === 'disconnected'", timeout=30_000)
    viewer = page.locator(".output_area .nnx-lab-viewer").first
    text = viewer.locator(".nnx-status").inner_text()
    assert "the kernel restarted; run the cell again" in text and "garbage-collected" not in text, text
    assert viewer.locator("button.nnx-refresh").is_disabled()
