"""Tutorials 03 and 04 as a new user runs them: JupyterLab, Run All, every cell runs, the widgets render."""

from __future__ import annotations

from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_views_and_modes_tutorial(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot):
    open_notebook(page, jupyter_server, NOTEBOOKS / "03_views_and_modes.ipynb", ui="lab")
    run_all_cells(page)
    panels = page.locator(".jp-OutputArea-output .nnx-lab-views")
    panels.first.locator(".nnx-views-instance").first.wait_for(state="visible", timeout=30_000)
    variants = panels.evaluate_all("els => els.map(e => e.dataset.variant)")
    assert "views" in variants and "modes" in variants, variants
    first = panels.first
    assert sorted(first.locator(".nnx-views-class").evaluate_all("els => els.map(e => e.dataset.class)")) == \
        ["BatchNorm", "Dropout", "MultiHeadAttention"]
    screenshot(page, "tutorial-03-view-panel", scroll_to=first)
    assert not page_events.script_dialogs


def test_capturing_tutorial(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot):
    open_notebook(page, jupyter_server, NOTEBOOKS / "04_capturing_intermediates.ipynb", ui="lab")
    run_all_cells(page)
    # the panel widget (the magic's static reports above it share the root class)
    panel = page.locator(".jp-OutputArea-output .nnx-lab-capture").filter(
        has=page.locator("tr.nnx-capture-row")).first
    panel.locator("tr.nnx-capture-row").first.wait_for(state="visible", timeout=30_000)
    assert panel.locator("input.nnx-capture-methods").count() == 1
    assert panel.locator(".nnx-capture-hist").count() > 0
    screenshot(page, "tutorial-04-capture-panel", scroll_to=panel)
    assert not page_events.script_dialogs
