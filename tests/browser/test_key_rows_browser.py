"""A PRNG key restored from a checkpoint is a key (issue 35): watch(path) shows it as the live viewer
does, status prng_key without statistics and without the warning colour, in a real browser."""

from __future__ import annotations

from .test_quickstart_browser import write_notebook

KEY = "layers[1].rngs.key"
COLOR = """(row) => { const st = row.querySelector('td.c-status .st'), td = row.querySelector('td.c-status');
                      return [st ? st.textContent : null, st ? getComputedStyle(st).color : null,
                              getComputedStyle(td).color]; }"""


def test_a_checkpoints_key_row_is_a_key_as_in_the_live_viewer(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    import orbax.checkpoint as ocp  # noqa: F401 - the checkpoint cell needs it in the kernel too

    nb = write_notebook(
        tmp_path / "keys.ipynb",
        "from flax import nnx\nimport nnx_lab\nimport orbax.checkpoint as ocp",
        "model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1)))\n"
        f"path = {str(tmp_path / 'ckpt')!r}\n"
        "saver = ocp.StandardCheckpointer()\n"
        "saver.save(path, nnx.state(model))\n"
        "saver.wait_until_finished()",
        "ckpt_view = nnx_lab.watch(path)",
        "live_view = nnx_lab.watch(model)",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    viewers = page.locator(".jp-OutputArea-output .nnx-lab-viewer")
    viewers.nth(1).locator(f'.nnx-row[data-path="{KEY}"]').wait_for(state="visible", timeout=60_000)
    ckpt, live = viewers.nth(0), viewers.nth(1)
    ckpt.locator(".nnx-status .msg").get_by_text("statistics read").wait_for(timeout=60_000)
    seen = {}
    for name, root in (("checkpoint", ckpt), ("live", live)):
        row = root.locator(f'.nnx-row[data-path="{KEY}"]')
        text, color, muted = row.evaluate(COLOR)
        assert text == "prng_key", (name, text)
        assert color == muted, (name, color, muted)  # the muted status colour, not the warning's orange
        assert row.locator("td.c-mean").inner_text() == "" and row.locator("td.c-norm").inner_text() == ""
        seen[name] = (row.locator("td.c-dtype").inner_text(), row.locator("td.c-shape").inner_text())
    assert seen["checkpoint"] == seen["live"] and seen["live"][0].startswith("key<"), seen
    screenshot(page, "checkpoint-key-row", scroll_to=ckpt)
    assert not page_events.page_errors, page_events.page_errors
