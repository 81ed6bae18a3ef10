"""The viewer fits the output it is given (issue 35): at output widths of 800 and 1048 px (JupyterLab's
output at a 1500 x 1000 window with the file browser open), with gradients, optimizer state and
update columns, nothing scrolls sideways, every header says what it is, every cut cell has its
full text on hover, and the columns left out are one click away."""

from __future__ import annotations

import pytest

from . import pages
from .test_quickstart_browser import write_notebook
from .test_series_browser import SETUP
from .test_viewer_browser import viewer

# A BatchNorm first (BatchStat rows, the widest type) before two Linear layers (gradients not zero).
WIDE = (
    SETUP[0],
    SETUP[1].replace("nnx.Sequential(", "nnx.Sequential(nnx.BatchNorm(3, rngs=nnx.Rngs(2)), "),
    SETUP[2]
    .replace("viewer.log(grads=grads)", "viewer.log(grads=grads, updates=grads)")
    .replace("jnp.ones((5, 3))", "jnp.arange(15.0).reshape(5, 3) ** 0.5"),
)


def wait_for_series_columns(page):
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-viewer .nnx-row[data-path=\"layers[1].kernel\"] .c-u_ratio')"
        " && document.querySelector('.nnx-lab-viewer .nnx-row[data-path=\"layers[1].kernel\"] .c-u_ratio')"
        ".textContent !== ''",
        timeout=30_000,
    )


def open_wide(page, jupyter_server, open_notebook, run_all_cells, path):
    """The WIDE notebook run in JupyterLab at a 1500 x 1000 window: its viewer, once its series columns show."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_notebook(page, jupyter_server, write_notebook(path, *WIDE), ui="lab")
    run_all_cells(page)
    root = viewer(page)
    wait_for_series_columns(page)
    return root


@pytest.mark.parametrize("width", [800, 1048])
def test_the_viewer_with_gradient_columns_fits_the_output(
    width, page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    root = open_wide(page, jupyter_server, open_notebook, run_all_cells, tmp_path / "fit.ipynb")
    print(f"output width at a 1500 x 1000 window: {pages.output_width(page, root):.0f} px")
    reached = pages.set_output_width(page, root, width)
    assert abs(reached - width) < 1, reached
    root.scroll_into_view_if_needed()
    report = pages.fit_report(root)
    print(f"at {width} px: {report}")

    assert report["root"]["scroll"] <= report["root"]["client"], report["root"]
    assert not report["wide"], report["wide"]  # no horizontal scroll anywhere in the widget
    shown = {h["col"] for h in report["headers"]}
    for col in ("path", "type", "shape", "mean", "g_norm"):
        assert col in shown, (col, shown)
    for head in report["headers"]:  # a word, not a symbol alone, and not cut
        assert any(ch.isalpha() for ch in head["text"]), head
    assert not [c for c in report["cut"] if not c["full"]], report["cut"]

    # Nothing is lost: the columns left out are listed behind the "+N columns" control, and one shows on a click.
    picker = root.locator(".nnx-colpick")
    folded = root.locator(".nnx-colpick input[type=checkbox]:not(:checked)")
    screenshot(page, f"viewer-lab-{width}", scroll_to=root)
    if width == 800:
        assert picker.is_visible()
        summary = picker.locator("summary")
        n = folded.count()
        assert n >= 1 and summary.inner_text().strip() == f"+{n} column{'s' if n > 1 else ''}", summary.inner_text()
        summary.click()
        col = folded.first.get_attribute("data-col")
        root.locator(f'.nnx-colpick input[data-col="{col}"]').check()
        page.wait_for_function(
            '(c) => { const th = document.querySelector(`.nnx-lab-viewer th[data-col="${c}"]`);'
            " return th && th.getClientRects().length > 0; }",
            arg=col,
            timeout=5_000,
        )
        screenshot(page, f"viewer-lab-{width}-picked", scroll_to=root)
        root.locator(".nnx-title").click()  # a click elsewhere closes the list
        root.locator(".nnx-colpick-list").wait_for(state="hidden")
        assert not pages.fit_report(root)["wide"]  # the picked column shown, the rest still fit
    assert not page_events.script_dialogs, page_events.dialogs


# More rows than the table's window (40 Linear layers: 120 rows): the spacer row below the drawn ones shows.
TALL = (
    "from flax import nnx\nimport nnx_lab",
    "model = nnx.Sequential(*[nnx.Linear(8, 8, rngs=nnx.Rngs(i)) for i in range(40)])\nviewer = nnx_lab.watch(model)",
)


def test_a_tall_model_keeps_the_path_column_wide(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    """The spacer rows of the windowed table span only the shown columns: spanning the folded ones
    made them columns again without a width, sharing the path column's room (paths cut to a letter,
    "b…" for bias, on any model taller than the window)."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    nb = write_notebook(tmp_path / "tall.ipynb", *TALL)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    root.locator('.nnx-row[data-path="layers[0].kernel"]').wait_for()
    assert root.locator(".nnx-spacer:not([hidden])").count() >= 1  # the window does not hold every row
    pages.set_output_width(page, root, 1048)
    root.scroll_into_view_if_needed()
    widths = root.evaluate(
        """(r) => ({path: r.querySelector('th[data-col="path"]').getBoundingClientRect().width,
                    table: r.querySelector('table.nnx-table').getBoundingClientRect().width,
                    shown: [...r.querySelectorAll('th')].filter((th) => th.getClientRects().length)
                        .reduce((s, th) => s + th.getBoundingClientRect().width, 0)})"""
    )
    screenshot(page, "viewer-lab-tall-1048", scroll_to=root)
    assert widths["path"] >= 150, widths  # the path column's minimum (columns.js PATH_MIN_WIDTH)
    assert abs(widths["shown"] - widths["table"]) < 2, widths  # no room given to a column nobody sees
    report = pages.fit_report(root)
    assert not [c for c in report["cut"] if not c["full"]], report["cut"]
    assert not page_events.page_errors, page_events.page_errors


def test_every_control_reads_on_one_line_in_a_narrow_output(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    """An 800 px window with JupyterLab's file browser open gives a 365 px output: "expand all" and
    "collapse all" broke over two lines and out of their 22 px buttons. Each control keeps its label
    on one line; the toolbar wraps whole controls instead."""
    root = open_wide(page, jupyter_server, open_notebook, run_all_cells, tmp_path / "narrow.ipynb")
    reached = pages.set_output_width(page, root, 360)
    assert abs(reached - 360) < 1, reached
    root.scroll_into_view_if_needed()
    screenshot(page, "viewer-lab-360", scroll_to=root)
    assert not pages.wrapped_controls(root)
    report = pages.fit_report(root)
    assert report["root"]["scroll"] <= report["root"]["client"], report["root"]
    assert not page_events.page_errors, page_events.page_errors


# A model with dropout (flax's translation Transformer): its Rngs give a RngKey row whose status is
# "prng_key" (no statistics) and no other row a status.
DROPOUT = (
    "from flax import nnx\nimport nnx_lab",
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.dense = nnx.Linear(8, 8, rngs=rngs)\n"
    "        self.dropout = nnx.Dropout(0.5, rngs=rngs)\n\n"
    "model = Net(nnx.Rngs(0))\nviewer = nnx_lab.watch(model)",
)


def test_a_status_column_only_keys_use_folds_before_the_statistics(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    """The viewer of a model with dropout kept a status column blank on every row but the RngKey's
    ("prng_key", which its type says too) while the statistics folded (at 590 px the norm, at 360 px
    all but the path and type): that status column folds first now, behind "+N columns"; a wide
    output still shows it."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_notebook(page, jupyter_server, write_notebook(tmp_path / "dropout.ipynb", *DROPOUT), ui="lab")
    run_all_cells(page)
    root = viewer(page)
    root.locator('.nnx-row[data-path="dense.kernel"] .c-mean').filter(has_text=".").wait_for(timeout=30_000)

    def shown() -> set[str]:
        return {h["col"] for h in pages.fit_report(root)["headers"]}

    pages.set_output_width(page, root, 1048)
    assert "status" in shown()
    pages.set_output_width(page, root, 590)
    cols = shown()
    assert "status" not in cols and {"shape", "mean", "norm"} <= cols, cols
    pages.set_output_width(page, root, 360)
    root.scroll_into_view_if_needed()
    screenshot(page, "viewer-lab-360-dropout", scroll_to=root)
    cols = shown()
    assert "status" not in cols, cols
    assert root.locator('.nnx-colpick input[data-col="status"]:not(:checked)').count() == 1  # one click away
    report = pages.fit_report(root)
    assert not report["wide"], report["wide"]
    assert not page_events.page_errors, page_events.page_errors
