"""The live State viewer in a real browser: rows, sort, filter, expand, live updates, XSS, theme, Notebook 7,
header curves of logged scalars and the NaN/Inf banner."""

from __future__ import annotations

from . import pages
from .test_quickstart_browser import EVIL_CLASS, EVIL_KEY, assert_readable, open_in_dark_theme, write_notebook

SETUP = (
    "import time, gc\nimport jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab",
    "class Block(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.linear = nnx.Linear(4, 8, rngs=rngs)\n"
    "        self.bn = nnx.BatchNorm(8, rngs=rngs)\n\n"
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.blocks = nnx.List([Block(rngs), Block(rngs)])\n"
    "        self.small = nnx.Param(jnp.ones(3))\n"
    "        self.large = nnx.Param(jnp.ones(300))\n"
    "        self.medium = nnx.Param(jnp.ones(30))\n\n"
    "model = Net(nnx.Rngs(0))",
    "viewer = nnx_lab.watch(model)",
)

# Samples the viewer's 'large' mean and whether any cell is busy, every 50 ms, from inside the page.
_JS_RECORD = """() => {
    window.__samples = [];
    window.__recorder = setInterval(() => {
        const busy = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt'))
            .some(e => e.textContent.includes('*'));
        const cell = document.querySelector('.nnx-lab-viewer .nnx-row[data-path="large"] .c-mean');
        window.__samples.push([busy, cell ? cell.textContent : null]);
    }, 50);
}"""


def run_new_cell_sampling(page, source: str) -> list:
    """Add `source` as a new last cell, run it, and return [busy, 'large' mean text] samples
    taken every 50 ms from inside the page while it ran."""
    page.evaluate(_JS_RECORD)
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, in command mode
    page.keyboard.press("Enter")
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("() => window.__samples.some(s => s[0])", timeout=15_000)
    page.wait_for_function(
        "() => window.__samples.length > 20 && !window.__samples.slice(-3).some(s => s[0])", timeout=60_000
    )
    return page.evaluate("() => { clearInterval(window.__recorder); return window.__samples; }")


def viewer(page):
    return pages.widget_root(page, ".nnx-lab-viewer", ".nnx-row")


def row_paths(root) -> list[str]:
    return pages.row_paths(root, ".nnx-row")


def test_viewer_rows_sort_filter_expand_and_live_updates(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "viewer.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)

    paths = row_paths(root)
    for expected in ("small", "large", "medium", "blocks[0].linear.kernel", "blocks[1].bn.var"):
        assert expected in paths, paths
    kernel = root.locator('.nnx-row[data-path="blocks[0].linear.kernel"]')
    assert kernel.locator(".c-shape").inner_text() == "(4, 8)"
    assert kernel.locator(".c-type").inner_text().strip() == "Param"
    screenshot(page, "viewer-lab-rows", scroll_to=root)

    # Sort by bytes: the root-level Variables reorder (ascending, then descending).
    root.locator('th[data-col="bytes"]').click()
    top = [p for p in row_paths(root) if p in ("small", "medium", "large")]
    assert top == ["small", "medium", "large"], top
    root.locator('th[data-col="bytes"]').click()
    top = [p for p in row_paths(root) if p in ("small", "medium", "large")]
    assert top == ["large", "medium", "small"], top
    screenshot(page, "viewer-lab-sorted", scroll_to=root)

    # Filter by path substring: only matching Variables remain, their modules kept as context.
    root.locator(".nnx-filter").fill("kernel")
    page.wait_for_timeout(300)
    assert sorted(row_paths(root)) == ["blocks[0].linear.kernel", "blocks[1].linear.kernel"]
    screenshot(page, "viewer-lab-filtered", scroll_to=root)
    root.locator(".nnx-filter").fill("")
    page.wait_for_timeout(300)

    # Collapse and expand a module.
    module = root.locator('.nnx-module[data-path="blocks[0]"]')
    module.click()
    page.wait_for_timeout(200)
    assert not any(p.startswith("blocks[0].") for p in row_paths(root))
    module.click()
    page.wait_for_timeout(200)
    assert "blocks[0].bn.mean" in row_paths(root)

    # A training loop in the next cell: the numbers change while that cell is still running.
    samples = run_new_cell_sampling(
        page,
        "for step in viewer.track(range(80)):\n"
        "    model.large.set_value(model.large.get_value() + 1.0)\n"
        "    time.sleep(0.05)",
    )
    while_busy = {text for busy, text in samples if busy and text}
    assert len(while_busy) >= 3, f"the viewer did not update during the loop: {sorted(while_busy)}"
    assert samples[-1][1] == "81", samples[-5:]
    screenshot(page, "viewer-lab-after-training", scroll_to=root)

    status = root.locator(".nnx-status")
    assert "live" in status.inner_text().lower()
    assert not page_events.script_dialogs, page_events.dialogs


def test_viewer_says_when_the_model_is_gone(page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    nb = write_notebook(tmp_path / "gone.ipynb", *SETUP, "del model\ngc.collect()")
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-viewer .nnx-status').textContent.toLowerCase().includes('gone')",
        timeout=15_000,
    )
    assert "small" in row_paths(root)  # the last numbers stay on screen
    screenshot(page, "viewer-lab-gone", scroll_to=root)


def test_viewer_shows_user_strings_as_text(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(
        tmp_path / "viewer_xss.ipynb",
        "from flax import nnx\nimport jax.numpy as jnp\nimport nnx_lab",
        "class Evil(nnx.Module):\n"
        "    def __init__(self):\n"
        f"        self.d = nnx.Dict({{{EVIL_KEY!r}: nnx.Param(jnp.ones(2))}})\n"
        "        self.sub = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n\n"
        f"Evil.__name__ = {EVIL_CLASS!r}\n"
        "model = Evil()\nviewer = nnx_lab.watch(model)",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    page.wait_for_timeout(1000)
    text = root.inner_text()
    assert EVIL_CLASS in text, text[:500]
    assert EVIL_KEY in text, text[:500]
    assert root.locator("img, script, [onerror]").count() == 0, root.inner_html()[:2000]
    screenshot(page, "viewer-lab-xss", scroll_to=root)
    assert page_events.dialogs == [], f"a script ran: {page_events.dialogs}"


def test_viewer_dark_theme_and_notebook7(page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    nb = write_notebook(tmp_path / "viewer_dark.ipynb", *SETUP)
    open_in_dark_theme(page, jupyter_server, open_notebook, nb)
    run_all_cells(page)
    root = viewer(page)
    assert_readable(root, ('.nnx-row[data-path="large"] .c-path', 'th[data-col="mean"]', ".nnx-status"))
    screenshot(page, "viewer-lab-dark", scroll_to=root)


def test_viewer_in_notebook7(page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    nb = write_notebook(tmp_path / "viewer_nb7.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="notebook")
    run_all_cells(page)
    root = viewer(page)
    assert "blocks[0].linear.kernel" in row_paths(root)
    screenshot(page, "viewer-notebook7", scroll_to=root)


def test_background_thread_updates_reach_the_browser(page, jupyter_server, open_notebook, run_all_cells, tmp_path):
    """With background=True, numbers change while a cell runs that never calls tick()."""
    setup = SETUP[:2] + ("viewer = nnx_lab.watch(model, background=True, max_rate=10)",)
    nb = write_notebook(tmp_path / "viewer_bg.ipynb", *setup)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    assert "unavailable" not in root.locator(".nnx-status").inner_text()
    samples = run_new_cell_sampling(
        page, "for step in range(60):\n    model.large.set_value(model.large.get_value() + 1.0)\n    time.sleep(0.05)"
    )
    while_busy = {text for busy, text in samples if busy and text}
    assert len(while_busy) >= 3, f"no background updates arrived during the cell: {sorted(while_busy)}"


def test_scalar_curves_in_the_header_and_a_nan_banner_naming_the_step(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    """viewer.log(loss=...) in a loop draws a curve in the header with its last value and step; a NaN
    seen at the 9th step stays in the banner, with the step, after the values are finite again."""
    loop = (
        "for step in viewer.track(range(30)):\n"
        "    viewer.log(loss=jnp.float32(1.0 / (step + 1)), lr=1e-3)\n"
        "    if step == 9:\n"
        "        model.small.set_value(model.small.get_value() * jnp.nan)\n"
        "        viewer.refresh()  # seen after 9 steps\n"
        "    if step == 19:\n"
        "        model.small.set_value(jnp.ones(3))"
    )
    nb = write_notebook(tmp_path / "viewer_scalars.ipynb", *SETUP, loop)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    loss = root.locator('.nnx-scalars .nnx-scalar[data-name="loss"]')
    loss.wait_for(state="visible", timeout=15_000)
    page.wait_for_function(
        "() => document.querySelector("
        "'.nnx-lab-viewer .nnx-scalar[data-name=\"loss\"] .nnx-scalar-step').textContent === 'step 30'",
        timeout=15_000,
    )
    assert loss.locator(".nnx-scalar-value").inner_text() == "0.03333"
    assert loss.locator("svg path").get_attribute("d").count("L") >= 10  # a curve, not a dot
    assert root.locator('.nnx-scalar[data-name="lr"] .nnx-scalar-value').inner_text() == "0.001"

    banner = root.locator(".nnx-banner")
    assert banner.is_visible()
    text = banner.locator(".nnx-banner-text").inner_text()
    assert text.startswith("first NaN at step 9 (refresh ") and text.endswith(" in small; now clean"), text
    assert root.locator('.nnx-row[data-path="small"] .c-nonfinite').inner_text() == ""  # clean now
    screenshot(page, "viewer-lab-scalars-and-banner", scroll_to=root)

    banner.locator(".nnx-banner-clear").click()
    page.wait_for_function("() => document.querySelector('.nnx-lab-viewer .nnx-banner').hidden", timeout=15_000)
    assert not page_events.script_dialogs, page_events.dialogs
