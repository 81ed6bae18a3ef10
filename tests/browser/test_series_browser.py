"""Gradients and optimizer state beside each parameter in a real browser: the ‖grad‖ and ratio
columns, the optimizer's step and unmatched leaves, and the 'statistics of' switch."""

from __future__ import annotations

from .test_quickstart_browser import write_notebook
from .test_viewer_browser import row_paths, viewer

SETUP = (
    "import jax.numpy as jnp, optax\nfrom flax import nnx\nimport nnx_lab",
    "model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1)))\n"
    "optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)\n"
    "viewer = nnx_lab.watch(model, optimizer=optimizer)",
    "for step in viewer.track(range(5)):\n"
    "    grads = nnx.grad(lambda m: (m(jnp.ones((5, 3))) ** 2).mean())(model)\n"
    "    optimizer.update(model, grads)\n"
    "    viewer.log(grads=grads)\n"
    "viewer.refresh()",
)


def test_gradient_columns_optimizer_step_and_the_statistics_switch(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "series.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    assert "layers[0].kernel" in row_paths(root)
    page.wait_for_function(
        "() => (document.querySelector('.nnx-lab-viewer .nnx-series-line') || {}).textContent"
        " && document.querySelector('.nnx-lab-viewer .nnx-series-line').textContent"
        ".includes('optimizer step 5')",
        timeout=30_000,
    )
    kernel = root.locator('.nnx-row[data-path="layers[0].kernel"]')
    assert root.locator('th[data-col="g_norm"]').is_visible()
    assert float(kernel.locator(".c-g_norm").inner_text()) > 0
    assert float(kernel.locator(".c-g_ratio").inner_text()) > 0
    # Adam's count is the optimizer step shown above, not a leaf "matched to no Variable" (issue 35)
    assert root.locator(".nnx-unmatched").is_hidden()
    param_mean = kernel.locator(".c-mean").inner_text()
    root.locator("select.nnx-group").select_option("mu")
    page.wait_for_function(
        "(before) => document.querySelector("
        "'.nnx-lab-viewer .nnx-row[data-path=\"layers[0].kernel\"] .c-mean').textContent !== before",
        arg=param_mean,
        timeout=15_000,
    )
    screenshot(page, "viewer-lab-series", scroll_to=root)
    assert not page_events.script_dialogs, page_events.dialogs


def test_a_table_wider_than_the_output_scrolls_sideways_with_the_path_column_held(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    # gradients and the update ratio beside the statistics, every column the output's width folded
    # shown again from the "+N columns" picker: wider than JupyterLab's output at its default width
    nb = write_notebook(
        tmp_path / "wide.ipynb",
        SETUP[0],
        SETUP[1],
        SETUP[2].replace("viewer.log(grads=grads)", "viewer.log(grads=grads, updates=grads)"),
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-viewer th[data-col=\"u_ratio\"]')"
        " && getComputedStyle(document.querySelector('.nnx-lab-viewer th[data-col=\"u_ratio\"]'))"
        ".display !== 'none'",
        timeout=30_000,
    )
    root.locator(".nnx-colpick summary").click()
    folded = root.locator(".nnx-colpick input[type=checkbox]:not(:checked)")
    for _ in range(20):  # a column shown folds another while the rest fit, until every one is chosen
        if not folded.count():
            break
        folded.first.click()
    assert root.locator(".nnx-colpick summary").inner_text() == "columns"
    root.locator(".nnx-colpick summary").click()
    scroller = root.locator(".nnx-scroll")
    size = scroller.evaluate("(el) => ({scroll: el.scrollWidth, client: el.clientWidth})")
    assert size["scroll"] > size["client"], size  # (if it fitted, nothing would be cut off either)
    more = root.locator(".nnx-more-right")
    assert more.is_visible()  # the shade at the right edge: more columns follow
    screenshot(page, "viewer-lab-series-wide", scroll_to=root)
    scroller.evaluate("(el) => { el.scrollLeft = el.scrollWidth; }")
    page.wait_for_function("() => document.querySelector('.nnx-lab-viewer .nnx-more-right').hidden", timeout=5_000)
    box = scroller.bounding_box()
    kernel = root.locator('.nnx-row[data-path="layers[0].kernel"]')
    for col in ("g_norm", "g_ratio", "u_ratio", "spark"):  # every column can be brought fully into view
        cell = root.locator(f'th[data-col="{col}"]').bounding_box()
        assert box["x"] <= cell["x"] and cell["x"] + cell["width"] <= box["x"] + box["width"] + 0.5, (col, cell, box)
    assert float(kernel.locator(".c-g_ratio").inner_text()) > 0
    assert float(kernel.locator(".c-u_ratio").inner_text()) > 0
    path = kernel.locator(".c-path").bounding_box()  # the path column stays at the left
    assert abs(path["x"] - box["x"]) <= 2 and kernel.locator(".c-path").inner_text().strip() == "kernel"
    screenshot(page, "viewer-lab-series-wide-scrolled", scroll_to=root)
    assert not page_events.script_dialogs, page_events.dialogs
