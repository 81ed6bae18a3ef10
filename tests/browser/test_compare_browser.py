"""The comparison widget and the viewer's compare-to control in a real browser: %nnx_compare and a
displayed Comparison as the tree table (verdict, problems first, bars, changed only, sort), the
viewer's "since" column after a pinned baseline, watch(checkpoint path), user strings as text."""

from __future__ import annotations

from . import pages
from .test_quickstart_browser import write_notebook

EVIL = "<img src=x onerror=alert(1)>"
MODEL = (
    "class Net(nnx.Module):\n"
    "    def __init__(self, width, seed=0):\n"
    "        rngs = nnx.Rngs(seed)\n"
    "        self.enc = nnx.Linear(4, width, rngs=rngs)\n"
    "        self.mid = nnx.Linear(width, width, rngs=rngs)\n"
    f"        self.d = nnx.data({{{EVIL!r}: nnx.Linear(width, 2, rngs=rngs)}})\n\n"
    "a = Net(8)\n"
    "b = Net(8)\n"
    "b.mid.kernel[...] = b.mid.kernel[...] * 1.2  # fine-tuned: one layer moved\n"
    "c = Net(16)  # one layer resized: not loadable"
)
SETUP = ("import jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab", MODEL)
ROW = "tr.nnx-cmp-row"


def paths(root):
    return pages.row_paths(root, "tbody tr[data-path]")


def test_comparison_widget_and_viewer_compare_to(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    import orbax.checkpoint as ocp  # noqa: F401 - the checkpoint cell needs it in the kernel too

    nb = write_notebook(
        tmp_path / "compare.ipynb",
        *SETUP,
        "%nnx_compare a b",
        "nnx_lab.compare(a, c)",
        "import orbax.checkpoint as ocp\n"
        f"path = {str(tmp_path / 'ckpt')!r}\n"
        "saver = ocp.StandardCheckpointer()\n"
        "saver.save(path, nnx.state(a))\n"
        "saver.wait_until_finished()\n"
        "checkpoint = nnx_lab.watch(path)",
        "viewer = nnx_lab.watch(a)\nviewer.compare_to('stats')",
        "a.mid.kernel[...] = a.mid.kernel[...] * 2.0",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)

    # %nnx_compare a b: loadable, one changed Variable on top with the full bar, the others identical.
    first = pages.widget_root(page, ".nnx-lab-compare", ROW)
    verdict = first.locator(".nnx-cmp-verdict").inner_text()
    assert "Net vs Net: b loads into a: 0 missing, 0 unexpected, 0 shape mismatches" in verdict, verdict
    assert "1 changed" in verdict
    rows = paths(first)
    assert rows[:2] == ["mid", "mid.kernel"], rows
    bar = first.locator(f'{ROW}[data-path="mid.kernel"] .nnx-cmp-bar > span').get_attribute("style")
    assert bar == "width:100.0%", bar
    rel = first.locator(f'{ROW}[data-path="mid.kernel"] td.c-rel_change .v').inner_text()
    assert rel == "0.2", rel
    first.locator("input.nnx-cmp-changed").check()
    assert paths(first) == ["mid", "mid.kernel"]
    assert first.locator(".nnx-cmp-showing").inner_text() == "1 of 6 Variables"
    screenshot(page, "compare-lab-changed-only", scroll_to=first)
    first.locator("input.nnx-cmp-changed").uncheck()

    # A displayed Comparison (a, c): not loadable; the shape mismatches on top, tinted, both shapes said.
    second = page.locator(".jp-OutputArea-output .nnx-lab-compare").nth(1)
    second.locator(ROW).first.wait_for(state="visible", timeout=30_000)
    assert "shape mismatches" in second.locator(".nnx-cmp-verdict").inner_text()
    assert "bad" in second.locator(".nnx-cmp-verdict").get_attribute("class")
    problem = second.locator(f"{ROW}.problem").first
    assert problem.get_attribute("data-status") == "shape"
    assert " vs " in problem.locator("td.c-shape").inner_text()
    second.locator('th[data-col="path"]').click()
    assert second.locator('th[data-col="path"]').get_attribute("aria-sort") == "ascending"
    screenshot(page, "compare-lab-shape-mismatch", scroll_to=second)

    # User strings are text: the XSS key shows literally, nothing was parsed as HTML.
    assert EVIL in first.inner_text()
    assert page.locator(".jp-OutputArea-output img, .jp-OutputArea-output [onerror]").count() == 0

    # watch(checkpoint path): the viewer's static table of the checkpoint.
    ckpt = page.locator(".jp-OutputArea-output .nnx-lab-viewer").first
    ckpt.locator(".nnx-row").first.wait_for(state="visible", timeout=30_000)
    ckpt.locator(".nnx-status .msg").get_by_text("statistics read").wait_for(timeout=60_000)
    assert "checkpoint" in ckpt.locator(".nnx-status").inner_text()

    # The viewer pinned its statistics, then mid.kernel doubled: the since column says 1 (a lower bound).
    live = page.locator(".jp-OutputArea-output .nnx-lab-viewer").nth(1)
    cell = live.locator('.nnx-row[data-path="mid.kernel"] td.c-since')
    page.wait_for_function(
        """() => { const v = document.querySelectorAll('.jp-OutputArea-output .nnx-lab-viewer')[1];
                   const c = v && v.querySelector('.nnx-row[data-path="mid.kernel"] td.c-since');
                   return c && c.textContent === '1'; }""",
        timeout=60_000,
    )
    assert cell.is_visible()
    assert live.locator('.nnx-row[data-path="enc.kernel"] td.c-since').inner_text() == "0"
    assert "since refresh" in live.locator(".nnx-baseline-label").inner_text()
    # viewer.compare_to('stats') from Python: the menu reads what is pinned, not "nothing".
    assert live.locator("select.nnx-baseline-choice").input_value() == "stats"
    # The menu says what a device copy costs before anyone pins it; pinning it says so again.
    option = live.locator("select.nnx-baseline-choice option[value=arrays]").inner_text()
    assert "device copy:" in option, option
    live.locator("select.nnx-baseline-choice").select_option("arrays")
    live.locator("button.nnx-baseline-pin").click()
    live.locator(".nnx-baseline-label").get_by_text("device copy:").wait_for(timeout=30_000)
    screenshot(page, "compare-lab-viewer-since", scroll_to=live)

    assert not page_events.script_dialogs, page_events.dialogs
    assert not page_events.page_errors, page_events.page_errors
