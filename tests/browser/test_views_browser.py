"""The view panel and mode toggle in a real browser: clicks change the kernel's model, views are
bound and share arrays, mixed modes warn, clicks during a running cell apply between its steps,
user strings stay text."""

from __future__ import annotations

import re

from .test_quickstart_browser import write_notebook

EVIL = "<img src=x onerror=alert(1)>"

SETUP = (
    "import time\nimport jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab",
    "class Net(nnx.Module):\n"
    "    def __init__(self, rngs):\n"
    "        self.attn = nnx.MultiHeadAttention(2, 4, decode=False, rngs=rngs)\n"
    "        self.drop = nnx.Dropout(0.5, rngs=rngs)\n"
    "        self.bn = nnx.BatchNorm(4, rngs=rngs)\n"
    "        self.linear = nnx.Linear(4, 4, rngs=rngs)\n"
    f"        self.odd = nnx.Dict({{{EVIL!r}: Evil()}})\n\n"
    f"class Evil(nnx.Module):\n"
    f"    def __init__(self):\n"
    f"        self.deterministic = False\n\n"
    f"    def set_view(self, deterministic: bool | None = None):\n"
    f"        '''Args:\n          deterministic: {EVIL} help text.\n        '''\n"
    f"        if deterministic is not None:\n"
    f"            self.deterministic = deterministic\n\n"
    f"Evil.__name__ = Evil.__qualname__ = {EVIL!r}\n"
    "model = Net(nnx.Rngs(0))\nmodel.train()",
    "%nnx_view model --as ev",
)


def panel(page, variant="views"):
    root = page.locator(f'.jp-OutputArea-output .nnx-lab-views[data-variant="{variant}"]').first
    root.locator(".nnx-views-instance").first.wait_for(state="visible", timeout=30_000)
    return root


def wait_status(page, root, state: str, timeout=30_000):
    root.locator(f'.nnx-views-status[data-state="{state}"]').wait_for(timeout=timeout)
    return root.locator(".nnx-views-status").inner_text()


def start_cell(page, source: str) -> None:
    """Type `source` into a new last cell and run it, without waiting for it."""
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")


def start_busy_loop(page, source: str, first_line: str):
    """Start a cell that prints STARTED and then loops; returns its input prompt once it runs."""
    start_cell(page, source)
    prompt = page.locator(".jp-Notebook .jp-Cell").filter(has_text=first_line).locator(".jp-InputPrompt")
    page.locator(".jp-OutputArea-output").filter(has_text="STARTED").last.wait_for(timeout=30_000)  # the loop runs
    return prompt


def run_cell(page, source: str, marker: str) -> str:
    """Run `source` as a new last cell; the text of its output line starting with `marker`.

    Waits for a *new* output with the marker: an earlier run_cell's output carries the same marker."""
    outputs = page.locator(".jp-OutputArea-output").filter(has_text=marker)
    before = outputs.count()
    start_cell(page, source)
    out = outputs.nth(before)
    out.wait_for(timeout=30_000)
    return next(line for line in out.inner_text().splitlines() if line.startswith(marker))


def test_view_panel_changes_the_kernels_model(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "views.ipynb", *SETUP)
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = panel(page)
    assert root.locator(".nnx-views-mode").first.inner_text().strip() == "train"
    screenshot(page, "views-lab-panel", scroll_to=root)

    # eval in place, read back from the kernel
    root.locator('button[data-mode="eval"]').click()
    wait_status(page, root, "done")
    assert (
        run_cell(
            page,
            "print('DET', model.drop.deterministic, model.bn.use_running_average, model.attn.deterministic)",
            "DET",
        )
        == "DET True True True"
    )
    root.locator('button[data-mode="train"]').click()
    wait_status(page, root, "done")

    # create a view of the Dropout class: bound under the chosen name, sharing arrays
    root.locator("select.nnx-views-scope").select_option(label="Dropout (1)")
    root.locator('[data-arg="deterministic"] button[data-value="true"]').click()
    assert root.locator(".nnx-views-name").input_value() == "ev"
    preview = root.locator('.nnx-views-code[data-action="view"]').inner_text()
    assert "ev = nnx.view(model, only=nnx.Dropout, deterministic=True)" in preview
    root.locator("button.nnx-views-create").click()
    wait_status(page, root, "done")
    assert (
        run_cell(
            page,
            "print('VIEW', ev.drop.deterministic, model.drop.deterministic, "
            "ev.linear.kernel is model.linear.kernel, ev.bn.use_running_average)",
            "VIEW",
        )
        == "VIEW True False True False"
    )

    # apply in place to one instance: the model becomes mixed, and the panel says so
    root.locator("select.nnx-views-scope").select_option(label="bn (BatchNorm)")
    root.locator('[data-arg="use_running_average"] button[data-value="true"]').click()
    root.locator("button.nnx-views-apply").click()
    wait_status(page, root, "done")
    mixed = root.locator(".nnx-views-mixed")
    mixed.wait_for(state="visible", timeout=15_000)
    assert "bn" in mixed.inner_text()
    assert root.locator(".nnx-views-mode").first.inner_text().strip() == "mixed"
    assert (
        run_cell(page, "print('BN', model.bn.use_running_average, model.drop.deterministic)", "BN") == "BN True False"
    )
    screenshot(page, "views-lab-mixed", scroll_to=root)

    # a value no module in scope takes is refused with a one-line message, nothing changed
    root.locator("select.nnx-views-scope").select_option(label="attn (MultiHeadAttention)")
    root.locator('input[data-arg="max_length"]').fill("12a")
    assert root.locator("button.nnx-views-apply").is_disabled()  # an int field refuses it in the browser
    root.locator('input[data-arg="max_length"]').fill("")
    root.locator('input[data-arg="batch_size"]').fill("__import__('os').getcwd()")  # text is never evaluated
    root.locator("button.nnx-views-apply").click()
    text = wait_status(page, root, "error")
    assert "is not a Python literal" in text, text
    assert (
        run_cell(page, "print('ATTN', model.attn.decode, getattr(model.attn, 'max_length', 'absent'))", "ATTN")
        == "ATTN False absent"
    )

    # user strings are text: the evil class name and key show literally, no element, no dialog
    assert root.get_by_text(EVIL).count() >= 1
    assert root.locator("img").count() == 0
    assert not page_events.script_dialogs, page_events.dialogs


def test_a_click_during_a_running_cell_applies_between_steps(
    page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(tmp_path / "busy.ipynb", *SETUP[:2], "toggle = nnx_lab.mode_toggle(model)")
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = panel(page, "modes")
    prompt = start_busy_loop(
        page,
        "seen = []; print('STARTED', flush=True)\n"
        "for step in toggle.track(range(120)):\n    time.sleep(0.05)\n"
        "    seen.append(model.drop.deterministic)\n"
        "print('SEEN', seen.index(True) if True in seen else None, len(seen))",
        "toggle.track",
    )
    page.wait_for_timeout(300)
    root.locator('button[data-mode="eval"]').click()
    # queued while the cell still runs, then done before it ends
    root.locator('.nnx-views-status[data-state="queued"], .nnx-views-status[data-state="done"]').wait_for(
        timeout=10_000
    )
    busy = "*" in prompt.inner_text()
    assert busy, "the loop ended before the click was answered"
    out = page.locator(".jp-OutputArea-output").filter(has_text="SEEN").last
    out.wait_for(timeout=30_000)
    first, steps = map(int, re.search(r"SEEN (\d+) (\d+)", out.inner_text()).groups())
    assert steps == 120 and 0 < first < 119, out.inner_text()
    assert root.locator(".nnx-views-mode").first.inner_text().strip() == "eval"
    screenshot(page, "views-lab-toggle-after-busy-click", scroll_to=root)
