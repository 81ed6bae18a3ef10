"""The viewer fits the output it is given on the ipywidgets 7 front end, as on Colab (classic
Notebook 6.5, Colab's stack; skipped where Notebook 7 is installed): at 800 and 1048 px output
widths, with gradient, optimizer and update columns, nothing scrolls sideways, every header says
what it is and every cut cell has its full text on hover (issue 35)."""

from __future__ import annotations

import nbformat
import pytest

from . import pages
from . import test_classic_notebook_browser as classic
from .conftest import _screenshot
from .test_fit_viewer_browser import WIDE, wait_for_series_columns

classic_server, classic_page, pytestmark = classic.classic_server, classic.classic_page, classic.pytestmark
_open, _run_cell = classic._open, classic._run_cell


@pytest.mark.parametrize("width", [800, 1048])
def test_the_viewer_with_gradient_columns_fits_the_classic_notebook_output(
    width, classic_server, classic_page, page_events
):
    page = classic_page
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in WIDE])
    path = f"fit-{width}.ipynb"
    nbformat.write(nb, classic_server.root_dir / path)
    _open(page, classic_server, path)
    for i in range(len(WIDE)):
        _run_cell(page, i)
    root = page.locator(".output_area .nnx-lab-viewer").first
    wait_for_series_columns(page)
    print(f"classic output width at a 1500 x 1000 window: {pages.output_width(page, root):.0f} px")
    reached = pages.set_output_width(page, root, width)
    assert abs(reached - width) < 1, reached
    report = pages.fit_report(root)
    print(f"at {width} px: {report}")
    assert report["root"]["scroll"] <= report["root"]["client"], report["root"]
    assert not report["wide"], report["wide"]
    shown = {h["col"] for h in report["headers"]}
    for col in ("path", "type", "shape", "mean", "g_norm"):
        assert col in shown, (col, shown)
    for head in report["headers"]:
        assert any(ch.isalpha() for ch in head["text"]), head
    assert not [c for c in report["cut"] if not c["full"]], report["cut"]
    _screenshot(page, f"viewer-classic-{width}", scroll_to=root)
    assert not page_events.page_errors, page_events.page_errors
