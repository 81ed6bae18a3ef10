"""Stacked layers in a real browser: a stacked Variable's layers closed under its row, opened by a click,
and the layer × refresh heatmap opened from its button, growing a column per refresh, values on hover."""

from __future__ import annotations

from . import pages
from .test_quickstart_browser import write_notebook

SETUP = (
    "import jax, jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab",
    "class Model(nnx.Module):\n"
    "    def __init__(self):\n"
    "        make = nnx.vmap(lambda key: nnx.Linear(4, 4, rngs=nnx.Rngs(key)), in_axes=0, out_axes=0)\n"
    "        self.blocks = make(jax.random.split(jax.random.key(0), 5))\n"
    "        self.head = nnx.Linear(4, 2, rngs=nnx.Rngs(1))\n\n"
    "model = Model()",
    "viewer = nnx_lab.watch(model, layers={'blocks': 0})",
)


def test_layers_group_rows_and_heatmap(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "layers.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = pages.widget_root(page, ".nnx-lab-viewer", ".nnx-row")

    paths = pages.row_paths(root, ".nnx-row")
    assert "blocks.kernel" in paths and "blocks.kernel[layer 0]" not in paths, paths
    group = root.locator('.nnx-row.nnx-group[data-path="blocks.kernel"]')
    assert group.get_attribute("aria-expanded") == "false"
    assert "5 layers" in group.locator(".c-path").inner_text()

    group.locator(".c-path").click()
    layer = root.locator('.nnx-row[data-path="blocks.kernel[layer 3]"]')
    layer.wait_for(state="visible", timeout=10_000)
    assert layer.locator(".c-path").inner_text().strip() == "layer 3"
    assert layer.locator(".c-shape").inner_text() == "(4, 4)"
    assert group.get_attribute("aria-expanded") == "true"

    group.locator("button.nnx-heat").click()
    heatmap = root.locator(".nnx-heatmap")
    heatmap.wait_for(state="visible", timeout=10_000)
    assert heatmap.locator(".hm-title").inner_text() == "blocks.kernel"
    before = heatmap.locator("rect").count()
    assert before >= 5 and before % 5 == 0, before  # 5 layers × the refreshes so far
    assert group.get_attribute("aria-expanded") == "true"  # the button does not toggle the group

    # The loop's refreshes (throttled; its last one forced): a column each.
    cell = "for _ in viewer.track(range(2)):\n    model.blocks.kernel[...] = model.blocks.kernel[...] * 1.5"
    page.locator(".jp-Notebook .jp-Cell").last.locator(".jp-InputArea-editor").click()  # not the viewer
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.insert_text(cell)
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        f"() => document.querySelectorAll('.nnx-heatmap rect').length >= {before + 5}", timeout=60_000
    )
    assert layer.is_visible()  # the group stays open across refreshes
    rect = heatmap.locator("rect").last
    rect.hover()
    readout = heatmap.locator(".hm-readout")
    page.wait_for_function(
        "() => document.querySelector('.nnx-heatmap .hm-readout').textContent.length > 0", timeout=5_000
    )
    assert readout.inner_text().startswith("layer 4 · latest refresh · norm ")
    screenshot(page, "viewer-layers-heatmap", scroll_to=root)
    heatmap.locator("button.hm-close").click()
    heatmap.wait_for(state="hidden", timeout=5_000)
