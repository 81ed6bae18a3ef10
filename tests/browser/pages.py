"""What the browser tests read off a rendered widget."""

from __future__ import annotations


def widget_root(page, root_selector: str, row_selector: str):
    """The first output holding `root_selector`, once its first `row_selector` row is visible."""
    root = page.locator(f".jp-OutputArea-output {root_selector}").first
    root.locator(row_selector).first.wait_for(state="visible", timeout=30_000)
    return root


def row_paths(root, row_selector: str) -> list[str]:
    """`data-path` of every rendered row (only the virtualized window is in the DOM)."""
    return root.locator(row_selector).evaluate_all("rows => rows.map(r => r.dataset.path)")
