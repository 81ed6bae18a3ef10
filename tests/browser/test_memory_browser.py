"""The memory widget in JupyterLab 4 (issue 36): a ledger as a cell's value and from %nnx_memory draws
the tree device -> holder -> group at an 800 px output without scrolling sideways, with every holder's
name visible as text (a hostile name too: no element made of it), the bytes with a bar, the "shared
with" notes and the freeing statements with the bytes each returns; a header click sorts."""

from __future__ import annotations

import os
from pathlib import Path

from . import pages
from .test_fit_widgets_browser import measure, problems
from .test_quickstart_browser import write_notebook

SHOTS = Path(os.environ.get("NNX_LAB_SHOTS", "/work/shots"))
HOSTILE = "<img src=x onerror=alert(1)>"

CELLS = (
    "import jax, jax.numpy as jnp, optax\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class MLP(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.embed = nnx.Linear(64, 512, rngs=rngs)\n"
    "        self.head = nnx.Linear(512, 10, rngs=rngs)\n\n"
    "    def __call__(self, x):\n"
    "        return self.head(nnx.relu(self.embed(x)))\n\n"
    "model = MLP(nnx.Rngs(0))\n"
    "optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)\n"
    "x = jnp.ones((128, 64))",
    "before = nnx.clone(model)\nmodel.embed.kernel[...] = model.embed.kernel[...] * 2\nbefore",
    "grads = nnx.grad(lambda m: m(x).mean())(model)\n"
    "grads_again = grads  # the same buffers under a second name\n"
    f"globals()[{HOSTILE!r}] = jnp.zeros((1000,))\n"
    "del before",
    "nnx_lab.memory()",
    "%nnx_memory grads --top 3",
)
HOLDERS = ("optimizer", "grads", "model", "Out[3]", "grads_again", HOSTILE)


def test_the_memory_widget_fits_800_px_and_names_every_holder(
    page, page_events, jupyter_server, open_notebook, run_all_cells, tmp_path
):
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = write_notebook(tmp_path / "memory_widget.ipynb", *CELLS)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = pages.widget_root(page, ".nnx-lab-memory-view", "tr.nnx-mem-row")
    reached = pages.set_output_width(page, root, 800)
    assert abs(reached - 800) < 1, reached
    root.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    report = measure(root)
    print(f"memory at 800 px: {report}")
    assert not problems("memory", 800, report)
    assert [h["col"] for h in report["headers"]] == ["label", "kind", "arrays", "bytes", "shared"]

    rows = root.locator("tr.nnx-mem-row")
    labels = {rows.nth(i).get_attribute("data-label"): rows.nth(i).locator("td.c-label") for i in range(rows.count())}
    for name in HOLDERS:
        assert name in labels, (name, list(labels))
        cell = labels[name]
        assert cell.is_visible() and cell.inner_text().strip() == name
    assert root.locator("img").count() == 0  # the hostile name is text
    grads = root.locator('tr.nnx-mem-row[data-label="grads"]')
    assert grads.locator("td.c-shared").inner_text() == "shared with grads_again"
    assert grads.locator("td.c-bytes").inner_text() == "150.0 KiB"  # (64 x 512 + 512 + 512 x 10 + 10) float32
    statements = root.locator("li.nnx-mem-freeing code").all_inner_texts()
    assert "%xdel _3" in statements and "del grads; del grads_again" in statements, statements
    assert root.locator(".nnx-mem-device").first.inner_text().startswith("cpu:0: ledger ")

    page.mouse.move(2, 2)  # no row :hover-tinted in the picture
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / "memory-lab-800.png"))

    root.locator('th[data-col="bytes"]').click()
    assert root.locator('th[data-col="bytes"]').get_attribute("aria-sort") == "descending"

    magic = page.locator(".jp-OutputArea-output .nnx-lab-memory-view").nth(1)
    magic.locator("tr.nnx-mem-row").first.wait_for(state="visible", timeout=30_000)
    shown = magic.locator("tr.nnx-mem-row").evaluate_all("rows => rows.map(r => r.dataset.label)")
    assert [s for s in shown if s not in ("cpu:0", "Param", "array")] == ["grads"], shown
    magic.screenshot(path=str(SHOTS / "memory-magic-lab-800.png"))
    assert not page_events.script_dialogs, page_events.dialogs
    assert not page_events.page_errors, page_events.page_errors
