"""A viewer whose kernel restarted says so (JupyterLab 4): not a green "live" with a "refresh now"
that does nothing. Restarted from the UI or through the REST API, the status says "disconnected:
the kernel restarted; run the cell again" and the buttons that ask the kernel stop. (A "refresh now"
left unanswered, where a front end says nothing of its kernel, is js/test/viewer.test.js's.)"""

from __future__ import annotations

from .test_quickstart_browser import write_notebook
from .test_viewer_browser import SETUP, viewer

STATE = "() => document.querySelector('.nnx-lab-viewer .nnx-status').getAttribute('data-state')"


def _live_viewer(page, jupyter_server, open_notebook, run_all_cells, tmp_path, name):
    nb = write_notebook(tmp_path / name, *SETUP)
    path = open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    root = viewer(page)
    page.wait_for_function(f"() => ({STATE})() === 'live'", timeout=15_000)
    return path, root


def test_a_kernel_restarted_from_the_ui_disconnects_the_viewer(
    page, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    _, root = _live_viewer(page, jupyter_server, open_notebook, run_all_cells, tmp_path, "restart_ui.ipynb")
    status = root.locator(".nnx-status")
    assert "live" in status.inner_text() and root.locator("button.nnx-refresh").is_enabled()

    page.locator(".lm-MenuBar-item").filter(has_text="Kernel").click()
    page.locator('.lm-Menu-item[data-command="kernelmenu:restart"]').click()
    page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart"
    page.wait_for_function(f"() => ({STATE})() === 'disconnected'", timeout=30_000)

    text = status.inner_text()
    assert "disconnected" in text and "the kernel restarted; run the cell again" in text, text
    assert "live" not in text.split("the kernel restarted")[0], text
    assert root.locator("button.nnx-refresh").is_disabled()  # refresh now no longer claims to work
    assert root.locator("button.nnx-baseline-pin").is_disabled()
    screenshot(page, "viewer-lab-kernel-restarted", scroll_to=root)


def test_a_kernel_restarted_through_the_rest_api_disconnects_the_viewer(
    page, jupyter_server, open_notebook, run_all_cells, tmp_path
):
    path, root = _live_viewer(page, jupyter_server, open_notebook, run_all_cells, tmp_path, "restart_rest.ipynb")
    kernel = jupyter_server.session(path)["kernel"]["id"]
    jupyter_server.api(f"/api/kernels/{kernel}/restart", method="POST", timeout=60)
    try:  # the new process's "starting" status, when the server's IOPub socket caught it
        page.wait_for_function(f"() => ({STATE})() === 'disconnected'", timeout=10_000)
    except Exception as e:  # playwright's TimeoutError (imported where the browser fixture is)
        if type(e).__name__ != "TimeoutError":
            raise
        # dropped while the server reconnected to the new process: the first status the new kernel
        # sends (here around the comm message it ignores) comes from another process, and says so
        root.locator("button.nnx-refresh").click()
        page.wait_for_function(f"() => ({STATE})() === 'disconnected'", timeout=30_000)
    text = root.locator(".nnx-status").inner_text()
    assert "the kernel restarted; run the cell again" in text, text
    assert "garbage-collected" not in text, text  # the exiting kernel said nothing untrue on its way out
    assert root.locator("button.nnx-refresh").is_disabled()
