"""A Variable whose metadata ``__repr__`` raises (issue 35 §6), in a real browser: the viewer's status
column is shown and that row's status cell says which metadata and what it raised; the other row's is empty."""

from __future__ import annotations

from . import pages
from .test_quickstart_browser import write_notebook

SETUP = (
    "import jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab",
    "class Unprintable:\n"
    "    def __repr__(self):\n"
    "        raise ValueError('no repr today')\n\n"
    "class Model(nnx.Module):\n"
    "    def __init__(self):\n"
    "        self.w = nnx.Param(jnp.ones((2, 3)), tag=Unprintable())\n"
    "        self.b = nnx.Param(jnp.zeros(3))\n\n"
    "model = Model()",
    "viewer = nnx_lab.watch(model)",
)


def test_a_raising_metadata_repr_is_said_in_the_row_status(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "metadata_repr.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = pages.widget_root(page, ".nnx-lab-viewer", ".nnx-row")
    status = root.locator('.nnx-row[data-path="w"] .c-status')
    status.wait_for(state="visible", timeout=30_000)
    said = "metadata tag: its repr raised ValueError: no repr today"
    assert status.inner_text().strip() == said
    assert status.get_attribute("title") == said  # the whole text on hover where the column is narrow
    assert root.locator('.nnx-row[data-path="b"] .c-status').inner_text().strip() == ""
    screenshot(page, "viewer-metadata-repr", scroll_to=root)
