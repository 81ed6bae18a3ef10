"""The comparison widget and the viewer's compare-to control on the ipywidgets 7 front end (Colab's
protocol): classic Notebook 6.5 in Chromium, on Colab's stack (skipped where Notebook 7 is installed).
%nnx_compare renders as the tree table; a pin click reaches the kernel and the since column fills
after the model changes; saved and reopened without widget extensions, the static table shows."""

from __future__ import annotations

import nbformat

from . import test_classic_notebook_browser as classic
from .conftest import ARTIFACTS

pytestmark = classic.pytestmark
classic_server, classic_page = classic.classic_server, classic.classic_page  # its fixtures, shared
_open, _run_cell = classic._open, classic._run_cell

CELLS = [
    "import jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class Net(nnx.Module):\n"
    "    def __init__(self, seed=0):\n"
    "        rngs = nnx.Rngs(seed)\n"
    "        self.enc = nnx.Linear(4, 8, rngs=rngs)\n"
    "        self.mid = nnx.Linear(8, 8, rngs=rngs)\n\n"
    "a, b = Net(), Net()\n"
    "b.mid.kernel[...] = b.mid.kernel[...] * 1.2",
    "%nnx_compare a b",
    "viewer = nnx_lab.watch(a)",
    "a.mid.kernel[...] = a.mid.kernel[...] * 2.0",
]


def test_compare_widget_and_compare_to_on_ipywidgets_7(classic_server, classic_page, page_events):
    page = classic_page
    path = "compare7.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS]), classic_server.root_dir / path
    )
    _open(page, classic_server, path)
    for i in range(4):
        _run_cell(page, i)

    cmp = page.locator(".output_area .nnx-lab-compare").first
    cmp.locator('tr.nnx-cmp-row[data-path="mid.kernel"]').wait_for(state="visible")
    assert "b loads into a: 0 missing, 0 unexpected, 0 shape mismatches" in cmp.locator(".nnx-cmp-verdict").inner_text()
    assert cmp.locator("tbody tr[data-path]").evaluate_all("rs => rs.map(r => r.dataset.path)")[:2] == [
        "mid",
        "mid.kernel",
    ]
    cmp.locator("input.nnx-cmp-changed").check()
    assert cmp.locator(".nnx-cmp-showing").inner_text() == "1 of 4 Variables"

    # The compare-to control: a pin click reaches the kernel; the next cell's change shows in "since".
    viewer = page.locator(".output_area .nnx-lab-viewer").first
    viewer.locator('.nnx-row[data-path="mid.kernel"]').wait_for(state="visible")
    viewer.locator("select.nnx-baseline-choice").select_option("stats")
    viewer.locator("button.nnx-baseline-pin").click()
    viewer.locator(".nnx-baseline-label").get_by_text("since refresh").wait_for(timeout=30_000)
    _run_cell(page, 4)
    viewer.locator('.nnx-row[data-path="mid.kernel"] td.c-since').filter(has_text="1").wait_for(timeout=30_000)
    assert viewer.locator('.nnx-row[data-path="enc.kernel"] td.c-since').inner_text() == "0"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare-classic-notebook.png"), full_page=True)
    assert not page_events.page_errors, page_events.page_errors

    # Saved, reopened with no widget front end: the comparison's static table.
    page.evaluate("() => Jupyter.notebook.save_notebook()")
    page.wait_for_function("() => !Jupyter.notebook.dirty", timeout=30_000)
    page.route("**/nbextensions/jupyter-js-widgets/**", lambda route: route.abort())
    page.route("**/nbextensions/anywidget/**", lambda route: route.abort())
    _open(page, classic_server, path)
    static = page.locator(".output_area .nnx-lab-compare table").first
    static.wait_for(state="visible")
    assert "mid.kernel" in static.inner_text() and page.locator(".output_area .nnx-cmp-verdict").count() == 0
