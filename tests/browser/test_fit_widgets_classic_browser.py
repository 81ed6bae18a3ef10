"""The summary, compare, capture and split widgets fit the output they are given (issue 35) on the
ipywidgets 7 front end, as on Colab: classic Notebook 6.5 in Chromium (Colab's stack; skipped where
Notebook 7 is installed). The same notebook and checks as test_fit_widgets_browser.py, at output
widths of 800 and 1048 px (the notebook's container set to the width that gives them). The capture
panel needs flax>=0.12.6 (nnx.capture): on Colab's flax 0.11 its cell says so, and it is left out."""

from __future__ import annotations

import nbformat
from flax import nnx

from . import pages
from . import test_classic_notebook_browser as classic
from .test_fit_widgets_browser import CELLS, SHOTS, WIDGETS, WIDTHS, measure, problems

classic_server, classic_page, pytestmark = classic.classic_server, classic.classic_page, classic.pytestmark


def set_classic_output_width(page, root, width: int) -> float:
    """Set the notebook container's width until the output holding `root` is `width` px wide (the
    classic notebook's container has fixed widths per window size; the output follows it one for one)."""
    for _ in range(4):
        now = pages.output_width(page, root)
        if abs(now - width) < 0.5:
            break
        page.evaluate(
            """(d) => { const c = document.getElementById('notebook-container');
                        c.style.width = (c.getBoundingClientRect().width + d) + 'px'; }""",
            width - now,
        )
        page.wait_for_timeout(300)
    page.wait_for_timeout(300)  # ResizeObserver callbacks and the next frame
    return pages.output_width(page, root)


def test_the_four_widgets_fit_800_and_1048_px_in_the_classic_notebook(classic_server, classic_page, page_events):
    page = classic_page
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbformat.write(nb, classic_server.root_dir / "fit_widgets.ipynb")
    classic._open(page, classic_server, "fit_widgets.ipynb")
    for i in range(len(CELLS)):
        classic._run_cell(page, i, timeout_ms=180_000)
    roots = {}
    widgets = {k: v for k, v in WIDGETS.items() if k != "capture" or hasattr(nnx, "capture")}
    for name, (sel, row) in widgets.items():
        roots[name] = page.locator(f".output_area {sel}").first
        roots[name].locator(row).first.wait_for(state="visible", timeout=30_000)
    if "capture" in roots:
        roots["capture"].locator("th[data-col=gmean]").wait_for(state="attached", timeout=30_000)

    SHOTS.mkdir(parents=True, exist_ok=True)
    found: list[str] = []
    for width in WIDTHS:
        reached = set_classic_output_width(page, roots["summary"], width)
        assert abs(reached - width) < 1, reached
        for name, root in roots.items():
            root.scroll_into_view_if_needed()
            page.wait_for_timeout(200)  # the windowed table draws the rows that scrolled in
            report = measure(root)
            print(f"{name} at {width} px: {report}")
            found += problems(name, width, report)
            page.mouse.move(2, 2)
            root.screenshot(path=str(SHOTS / f"{name}-classic-{width}.png"))
    assert not found, "\n".join(found)
    assert not page_events.page_errors, page_events.page_errors
