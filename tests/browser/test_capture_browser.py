"""The capture panel in a real browser: rows and histograms after a call, toggling method outputs
and a submodule and seeing the next call's rows change, a refused toggle undone, gradients next to
forward values, XSS-named sow keys and classes inert, and the dark theme."""

from __future__ import annotations

import re

from . import pages
from .test_quickstart_browser import assert_readable, open_in_dark_theme, write_notebook
from .test_views_browser import start_busy_loop

EVIL_KEY = "<img src=x onerror=alert(1)>"
EVIL_CLASS = "Evil<script>alert(2)</script>"

SETUP = (
    "import jax, jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab",
    "class Block(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.linear = nnx.Linear(3, 4, rngs=rngs)\n"
    "    def __call__(self, x):\n"
    "        h = self.linear(x)\n"
    "        self.sow(nnx.Intermediate, 'act', h)\n"
    "        h = self.perturb('act', h)\n"
    "        return jax.nn.relu(h)\n\n"
    f"Block.__name__ = {EVIL_CLASS!r}\n\n"
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.b0 = Block(rngs)\n"
    "        self.head = nnx.Linear(4, 2, rngs=rngs)\n"
    "    def __call__(self, x):\n"
    "        h = self.b0(x)\n"
    f"        self.sow(nnx.Intermediate, {EVIL_KEY!r}, h)\n"
    "        return self.head(h)\n\n"
    "model = Net(nnx.Rngs(0))\n"
    "x = jnp.linspace(-1, 1, 96).reshape(32, 3)",
    "panel = nnx_lab.capture_panel(model)",
    "y = panel(x)\nprint('result', y.shape)",
)

# Each toggle's state as the page shows it (checked, indeterminate).
_JS_TOGGLES = """(root) => Object.fromEntries(Array.from(root.querySelectorAll('input[type=checkbox]')).map(i =>
    [i.dataset.type !== undefined ? 'type:' + i.dataset.type : i.dataset.module !== undefined ? 'module:' + i.dataset.module
     : 'methods', [i.checked, i.indeterminate]]))"""


def capture_panel(page):
    return pages.widget_root(page, ".nnx-lab-capture", "tr.nnx-capture-row")


def row_paths(root) -> list[str]:
    return pages.row_paths(root, "tr.nnx-capture-row")


def run_new_cell(page, source: str) -> None:
    """Type `source` into the empty last cell (Shift+Enter leaves one) or a new one, and run it;
    returns once it ran and no cell is busy."""
    last = page.locator(".jp-Notebook .jp-Cell").last
    last.click()
    page.keyboard.press("Escape")
    if last.locator(".jp-InputArea-editor").inner_text().strip():
        page.keyboard.press("b")  # a new cell below, in command mode
    page.keyboard.press("Enter")
    page.keyboard.insert_text(source)
    page.evaluate("() => { window.__nnxCell = document.querySelectorAll('.jp-Notebook .jp-CodeCell').length - 1; }")
    page.keyboard.press("Shift+Enter")
    # Done when the cell just run shows its execution count (Shift+Enter adds an empty "[ ]:" cell below).
    page.wait_for_function(
        """() => { const p = Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt'));
                   const mine = p[window.__nnxCell];
                   return mine && /^\\[\\d+\\]:?$/.test(mine.textContent.trim()) && !p.some(e => e.textContent.includes('*')); }""",
        timeout=60_000,
    )


def wait_rows(page, predicate_js: str, timeout: int = 30_000):
    page.wait_for_function(
        f"""() => {{ const rows = Array.from(document.querySelectorAll('.nnx-lab-capture tr.nnx-capture-row'))
                     .map(r => r.dataset.path); return ({predicate_js})(rows); }}""",
        timeout=timeout,
    )


def assert_inert(page, root, page_events):
    assert root.locator("img, script, [onerror]").count() == 0, root.inner_html()[:2000]
    assert page.locator('img[src="x"]').count() == 0
    assert not page_events.script_dialogs, page_events.dialogs


def test_capture_panel_toggles_rows_histograms_and_grads(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "capture.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = capture_panel(page)
    evil_row = f"['{EVIL_KEY}'][0]"
    assert sorted(row_paths(root)) == sorted([evil_row, "b0.act[0]"])

    # Rows: the sow key is literal text; statistics and a drawn histogram per value.
    # A sown tuple's values are rows of their own ("act[0]"), the sow key literal text.
    evil = root.locator("tr.nnx-capture-row").first
    assert evil.locator(".c-path").inner_text() == evil_row
    assert root.locator('tr.nnx-capture-row[data-path="b0.act[0]"] .c-path').inner_text() == "act[0]"
    assert root.locator("tr.nnx-capture-module").filter(has_text=EVIL_CLASS).count() == 1
    act = root.locator('tr.nnx-capture-row[data-path="b0.act[0]"]')
    assert act.locator(".c-shape").inner_text() == "(32, 4)"
    assert act.locator(".c-type").inner_text().strip() == "Intermediate"
    assert re.fullmatch(r"-?\d[\d.e+-]*", act.locator(".c-mean").inner_text()), act.locator(".c-mean").inner_text()
    hists = root.locator(".nnx-capture-hist")
    assert hists.count() == 2
    for i in range(2):
        box = hists.nth(i).bounding_box()
        assert box and box["width"] >= 60 and box["height"] >= 10, box
        d = hists.nth(i).locator("path").get_attribute("d")
        assert d and d.count("z") >= 2, d  # at least two non-empty bins of a linspace activation
    assert "128 finite values" in act.locator("td.c-hist").get_attribute("title")
    assert evil.is_visible()
    head = root.locator(".nnx-capture-head").inner_text()
    assert re.search(r"capture · Net\s*·\s*1 call\s*·\s*2 values captured", head), head
    # The module tree: a checkbox per submodule, the XSS class name as text.
    root.locator("details.nnx-capture-modules > summary").click()
    toggles = root.evaluate(_JS_TOGGLES)
    assert toggles == {
        "type:Intermediate": [True, False],
        "type:Perturbation": [False, False],
        "methods": [False, False],
        "module:": [True, False],
        "module:b0": [True, False],
        "module:b0.linear": [True, False],
        "module:head": [True, False],
    }, toggles
    assert root.locator("label.nnx-capture-module").filter(has_text=EVIL_CLASS).count() == 1
    screenshot(page, "capture-lab-first-call", scroll_to=root)
    assert_inert(page, root, page_events)

    # Toggle method outputs and untick head in the browser; Python answers (the note shows); the
    # next call, from a new cell, records every method's output except head's.
    root.locator("input.nnx-capture-methods").check()
    root.locator('input[data-module="head"]').uncheck()
    # "waiting for the kernel" from the click until Python answers both; then "changed"
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-capture .nnx-capture-pending').dataset.state === 'changed'",
        timeout=15_000,
    )
    assert "next call" in root.locator(".nnx-capture-pending").inner_text()
    # Python's answer to the head click: the root's checkbox says "some of it" (head is off).
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-capture input[data-module=\"\"]').indeterminate", timeout=15_000
    )
    assert "3 of 4 modules" in root.locator("details.nnx-capture-modules > summary").inner_text()
    run_new_cell(page, "y = panel(x)")
    wait_rows(page, "rows => rows.includes('b0.linear.__call__[0]')")
    assert sorted(row_paths(root)) == sorted(
        [evil_row, "__call__[0]", "b0.__call__[0]", "b0.act[0]", "b0.linear.__call__[0]"]
    )
    assert root.locator(".nnx-capture-hist").count() == 5
    assert root.locator(".nnx-capture-pending").is_hidden()
    screenshot(page, "capture-lab-method-outputs", scroll_to=root)

    # A toggle Python refuses (the last type) is undone on screen, with the reason.
    root.locator('input[data-type="Intermediate"]').uncheck()
    page.wait_for_function(
        "() => document.querySelector('.nnx-lab-capture input[data-type=\"Intermediate\"]').checked", timeout=15_000
    )
    status = root.locator(".nnx-capture-status")
    assert "keep at least one Variable type" in status.inner_text()
    assert status.get_attribute("data-level") == "error"

    # Gradients: next to the value sown under the same name, in purple columns with a histogram.
    run_new_cell(page, "res = panel.grads(lambda m, x: (m(x) ** 2).mean(), x)\nprint('loss', float(res.loss))")
    page.wait_for_selector('.nnx-lab-capture th[data-col="gmean"]', timeout=30_000)
    act = root.locator('tr.nnx-capture-row[data-path="b0.act[0]"]')
    assert act.locator("td.c-gmean").inner_text() != ""
    assert act.locator("td.c-ghist .nnx-capture-hist").count() == 1
    assert root.locator('tr.nnx-capture-row[data-path="__call__[0]"] td.c-gmean').inner_text() == ""
    assert "loss" in root.locator(".nnx-capture-head").inner_text()
    screenshot(page, "capture-lab-grads", scroll_to=root)
    assert_inert(page, root, page_events)
    assert not page_events.page_errors, page_events.page_errors


def test_capture_panel_dark_theme(page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    nb = write_notebook(tmp_path / "capture_dark.ipynb", *SETUP)
    open_in_dark_theme(page, jupyter_server, open_notebook, nb)
    run_all_cells(page)
    root = capture_panel(page)
    assert_readable(
        root,
        (
            'tr.nnx-capture-row[data-path="b0.act[0]"] .c-path',
            'th[data-col="path"]',
            ".nnx-capture-head .root",
            "label.nnx-capture-toggle .nm",
            "ul.nnx-capture-messages > li",
        ),
    )
    screenshot(page, "capture-lab-dark", scroll_to=root)


def test_panels_say_when_the_model_is_gone(page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path):
    """`del model` frees it while a capture panel and a mode toggle are on screen; both say so."""
    nb = write_notebook(
        tmp_path / "gone.ipynb", *SETUP, "toggle = nnx_lab.mode_toggle(model)", "import gc\ndel model\ngc.collect()"
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = capture_panel(page)
    status = root.locator(".nnx-capture-status")
    page.wait_for_function(
        "(el) => el.textContent.includes('the model is gone')", arg=status.element_handle(), timeout=15_000
    )
    assert status.get_attribute("data-level") == "error"
    assert len(row_paths(root)) == 2  # the last values captured stay on screen
    toggle = page.locator('.jp-OutputArea-output .nnx-lab-views[data-variant="modes"]').first
    message = toggle.locator(".nnx-views-message")
    page.wait_for_function(
        "(el) => el.textContent.includes('the model is gone')", arg=message.element_handle(), timeout=15_000
    )
    assert toggle.locator('button[data-mode="eval"]').get_attribute("disabled") is not None
    screenshot(page, "panels-lab-gone", scroll_to=root)


def test_a_toggle_clicked_during_a_loop_is_queued_and_applies_at_the_next_call(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "capture-busy.ipynb", *SETUP, "import time")
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = capture_panel(page)
    prompt = start_busy_loop(
        page,
        "seen = []; print('STARTED', flush=True)\n"
        "for step in range(120):\n    time.sleep(0.05)\n    panel(x)\n"
        "    seen.append(any('__call__' in str(p) for p, _ in nnx.to_flat_state(panel.captured)))\n"
        "print('SEEN', seen.index(True) if True in seen else None, len(seen))",
        "seen = []",
    )
    page.wait_for_timeout(300)
    pending = root.locator(".nnx-capture-pending")
    # every state the line passes through (queued lasts until the loop's next call: milliseconds)
    pending.evaluate("""el => { window.__nnxStates = [];
        new MutationObserver(() => window.__nnxStates.push([el.dataset.state, el.textContent]))
            .observe(el, { attributes: true, childList: true, characterData: true, subtree: true }); }""")
    root.locator("input.nnx-capture-methods").check()
    page.wait_for_function("() => window.__nnxStates.some(([s]) => s === 'queued')", timeout=10_000)
    assert "*" in prompt.inner_text(), "the loop ended before the click was queued"
    states = page.evaluate("window.__nnxStates")
    assert any(s == "queued" and "next call" in text for s, text in states), states
    out = page.locator(".jp-OutputArea-output").filter(has_text="SEEN").last
    out.wait_for(timeout=30_000)
    first, calls = map(int, re.search(r"SEEN (\d+) (\d+)", out.inner_text()).groups())
    assert calls == 120 and 0 < first < 119, out.inner_text()  # method outputs from a call inside the loop on
    assert root.locator("input.nnx-capture-methods").is_checked()
    assert pending.get_attribute("data-state") == "", pending.get_attribute("data-state")
    wait_rows(page, "rows => rows.some(r => r.includes('__call__'))")
    screenshot(page, "capture-lab-after-busy-toggle", scroll_to=root)
    assert not page_events.script_dialogs
