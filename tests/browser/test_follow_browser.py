"""A viewer following a name in a real browser: a functional loop rebinding `model`, then the name
bound to something else (a status), then to another model (its rows)."""

from __future__ import annotations

from . import pages
from .test_quickstart_browser import write_notebook

SETUP = (
    "import jax\nfrom flax import nnx\nimport nnx_lab\n"
    "model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))\n"
    "graphdef, state = nnx.split(model)\n"
    "step = jax.jit(lambda s: jax.tree.map(lambda x: x + 1, s))",
    'viewer = nnx_lab.watch("model")',
    "for _ in viewer.track(range(20)):\n"
    "    state = step(state)\n"
    "    model = nnx.merge(graphdef, state)   # a new model every step",
    "model = 'oops'",
)

STATUS = ".nnx-lab-viewer .nnx-status"


def wait_for_status(page, text: str) -> None:
    page.wait_for_function(
        f"() => (document.querySelector({STATUS!r}) || {{}}).textContent?.includes({text!r})", timeout=30_000
    )


def run_new_cell(page, source: str) -> None:
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, in command mode
    page.keyboard.press("Enter")
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")


def test_viewer_follows_a_rebound_name(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "follow.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = pages.widget_root(page, ".nnx-lab-viewer", ".nnx-row")

    # The last cell bound `model` to a str: a status, not "gone"; the last numbers stay.
    wait_for_status(page, "`model` is a str, not a model")
    status = root.locator(".nnx-status").inner_text()
    assert "missing" in status and "following `model`" in status and "gone" not in status, status
    bias = root.locator('.nnx-row[data-path="bias"] .c-mean')
    assert bias.inner_text() == "20", "the viewer followed the 20 rebound models"
    screenshot(page, "viewer-follow-missing", scroll_to=root)

    # Bound to another model again: live, with that model's rows.
    run_new_cell(page, "model = nnx.Linear(2, 5, rngs=nnx.Rngs(1))")
    wait_for_status(page, "live")
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-viewer .nnx-row[data-path=\"kernel\"] .c-shape')"
        "?.textContent === '(2, 5)'",
        timeout=30_000,
    )
    assert root.locator('.nnx-row[data-path="bias"] .c-mean').inner_text() == "0"
    assert "following `model`" in root.locator(".nnx-status").inner_text()
    assert not page_events.script_dialogs, page_events.dialogs
