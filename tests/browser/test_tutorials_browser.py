"""Tutorials 03 and 04 as a new user runs them, in JupyterLab and in Notebook 7: Run All, every cell
runs, the widgets render, and a click reaches the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_views_browser import run_cell

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
UIS = pytest.mark.parametrize("ui", ["lab", "notebook"])


def assert_app(page, ui):
    if ui == "notebook":
        assert page.locator('body[data-notebook="notebooks"]').count() == 1, "not the Notebook 7 app"


@UIS
def test_views_and_modes_tutorial(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, ui):
    open_notebook(page, jupyter_server, NOTEBOOKS / "03_views_and_modes.ipynb", ui=ui)
    assert_app(page, ui)
    run_all_cells(page)
    panels = page.locator(".jp-OutputArea-output .nnx-lab-views")
    panels.first.locator(".nnx-views-instance").first.wait_for(state="visible", timeout=30_000)
    variants = panels.evaluate_all("els => els.map(e => e.dataset.variant)")
    assert "views" in variants and "modes" in variants, variants
    first = panels.first
    assert sorted(first.locator(".nnx-views-class").evaluate_all("els => els.map(e => e.dataset.class)")) == [
        "BatchNorm",
        "Dropout",
        "MultiHeadAttention",
    ]
    assert "gone" not in first.inner_text()  # the training section's model has a name of its own
    screenshot(page, f"tutorial-03-view-panel-{ui}", scroll_to=first)

    # the last mode toggle (on `learner`, the training section's model): a click switches the kernel's model
    toggle = page.locator('.jp-OutputArea-output .nnx-lab-views[data-variant="modes"]').last
    for mode, deterministic in (("eval", "True"), ("train", "False")):
        toggle.locator(f'button[data-mode="{mode}"]').click()
        toggle.locator('.nnx-views-status[data-state="done"]').wait_for(timeout=30_000)
        page.wait_for_function(
            "([el, m]) => el.getAttribute('data-mode') === m",
            arg=[toggle.locator(".nnx-views-mode").first.element_handle(), mode],
            timeout=10_000,
        )
        assert run_cell(page, "print('DROP', learner.drop.deterministic)", "DROP") == f"DROP {deterministic}"
    assert not page_events.script_dialogs


@UIS
def test_capturing_tutorial(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, ui):
    open_notebook(page, jupyter_server, NOTEBOOKS / "04_capturing_intermediates.ipynb", ui=ui)
    assert_app(page, ui)
    run_all_cells(page)
    # %%nnx_capture's reports: the panel's table without toggles; the --grads one has gradient columns
    reports = page.locator(".jp-OutputArea-output .nnx-lab-capture").filter(
        has=page.locator(".nnx-capture-head", has_text="%%nnx_capture")
    )
    with_grads = reports.filter(has=page.locator("th.grad")).first
    with_grads.locator("tr.nnx-capture-row td.c-gnorm").first.wait_for(state="visible", timeout=30_000)
    assert with_grads.locator("tr.nnx-capture-module").count() > 0  # a tree: module rows above the values
    assert with_grads.locator(".nnx-capture-hist").count() > 0
    assert (
        reports.locator("input:not(.nnx-colpick input)").count() == 0
    )  # no collect toggles (the column picker's boxes aside)
    screenshot(page, f"tutorial-04-magic-report-{ui}", scroll_to=with_grads)
    # the panel widget
    panel = (
        page.locator(".jp-OutputArea-output .nnx-lab-capture")
        .filter(has=page.locator("input.nnx-capture-methods"))
        .filter(has=page.locator("tr.nnx-capture-row"))
        .first
    )
    panel.locator("tr.nnx-capture-row").first.wait_for(state="visible", timeout=30_000)
    assert panel.locator(".nnx-capture-hist").count() > 0
    screenshot(page, f"tutorial-04-capture-panel-{ui}", scroll_to=panel)
    # the training loop's panel (panel.track): its last step reached the page when the loop ended
    training = page.locator(".jp-OutputArea-output .nnx-lab-capture").filter(
        has=page.locator(".nnx-capture-calls", has_text="200 calls")
    )
    training.locator("tr.nnx-capture-row").first.wait_for(state="visible", timeout=30_000)
    assert sorted(training.locator("tr.nnx-capture-row").evaluate_all("els => els.map(e => e.dataset.path)")) == [
        "blocks[0].act[0]",
        "blocks[1].act[0]",
    ]
    screenshot(page, f"tutorial-04-training-panel-{ui}", scroll_to=training)
    assert not page_events.script_dialogs
