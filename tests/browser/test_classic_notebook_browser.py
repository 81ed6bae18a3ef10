"""The ipywidgets 7 front end, as on Colab: classic Notebook 6.5 with widgetsnbextension 3.6 and
anywidget's nbextension, in Chromium. Colab's own front end cannot run here; its widget manager
speaks the same ipywidgets 7 protocol.

Runs on Colab's stack (.ci/run's second venv, ci/colab.txt); skipped where Notebook 7 is installed.
One notebook, run cell by cell: the viewer renders and updates during a tracked loop, the split
report renders, a mode switch click reaches the model; then, saved and reopened with the widget
extensions off (what VS Code, GitHub and nbviewer show), every widget shows its static fallback.
"""

from __future__ import annotations

import importlib.metadata
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import nbformat
import pytest

from .conftest import VIEWPORT, JupyterServer

pytestmark = [
    pytest.mark.classic_notebook,
    pytest.mark.skipif(
        int(importlib.metadata.version("notebook").split(".")[0]) >= 7,
        reason="the classic Notebook 6.5 (ipywidgets 7 front end) runs on Colab's stack: pip install -r ci/colab.txt",
    ),
]

CELLS = [
    "import time\nimport jax.numpy as jnp\nfrom flax import nnx\nimport nnx_lab\n%load_ext nnx_lab\n"
    "from nnx_lab.core import compat",
    "model = nnx.Sequential(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))\nmodel.train()",
    "viewer = nnx_lab.watch(model)",
    "for step in viewer.track(range(60)):\n"
    "    compat.set_value(model.layers[0].bias, jnp.full((8,), float(step)))\n"
    "    viewer.log(loss=jnp.float32(step) / 2)\n"
    "    time.sleep(0.05)",
    "%nnx_split model nnx.Param ...",
    "panel = nnx_lab.mode_toggle(model)",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def classic_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("classic")
    dirs = {n: base / n for n in ("root", "config", "data", "runtime", "ipython")}
    for d in dirs.values():
        d.mkdir()
    token, port = secrets.token_hex(16), _free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PLATFORM_DIRS="0",
        PYTHONUNBUFFERED="1",
    )
    env.pop("JUPYTER_PATH", None)
    cmd = [
        sys.executable,
        "-m",
        "notebook",
        "--no-browser",
        "--NotebookApp.ip=127.0.0.1",
        f"--NotebookApp.port={port}",
        "--NotebookApp.port_retries=0",
        f"--NotebookApp.token={token}",
        f"--NotebookApp.notebook_dir={dirs['root']}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = base / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=dirs["root"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        server = JupyterServer(
            base_url=f"http://127.0.0.1:{port}",
            token=token,
            root_dir=dirs["root"],
            settings_dir=dirs["config"],
            log_path=log_path,
            proc=proc,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    server.api("/api/status", timeout=2)
                    break
                except (urllib.error.URLError, OSError, ValueError):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"jupyter notebook did not start:\n{server.log_tail()}") from None
                    time.sleep(0.25)
            yield server
        finally:
            server.stop()


@pytest.fixture
def classic_page(browser, page_events):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    pg = context.new_page()
    pg.on("dialog", lambda d: (page_events.dialogs.append((d.type, d.message)), d.dismiss()))
    pg.on("pageerror", lambda e: page_events.page_errors.append(str(e)))
    try:
        yield pg
    finally:
        context.close()


def _open(page, server, path):
    page.goto(server.url(f"/notebooks/{path}"), wait_until="domcontentloaded")
    page.wait_for_function(
        "() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected()",
        timeout=60_000,
    )


def _run_cell(page, index: int, timeout_ms: int = 60_000) -> None:
    page.evaluate(f"() => Jupyter.notebook.execute_cells([{index}])")
    page.wait_for_function(
        f"() => {{ const c = Jupyter.notebook.get_cell({index});"
        f" return c.input_prompt_number !== '*' && c.input_prompt_number != null; }}",
        timeout=timeout_ms,
    )


def _kernel_eval(page, expression: str) -> str:
    """The repr of `expression`, run in the notebook's kernel (not through a cell)."""
    return page.evaluate(
        """(expr) => new Promise((resolve) => {
        Jupyter.notebook.kernel.execute('', {shell: {reply: (m) =>
            resolve(m.content.user_expressions.r.data['text/plain'])}},
            {silent: false, store_history: false, user_expressions: {r: expr}});
    })""",
        expression,
    )


def test_widgets_in_the_classic_notebook_then_saved_static(classic_server, classic_page, page_events):
    page = classic_page
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    path = "colab.ipynb"
    nbformat.write(nb, classic_server.root_dir / path)
    _open(page, classic_server, path)
    for i in range(3):
        _run_cell(page, i)

    # The viewer renders with a row per Variable.
    viewer = page.locator(".output_area .nnx-lab-viewer").first
    viewer.locator('.nnx-row[data-path="layers[0].bias"]').wait_for(state="visible")
    mean = viewer.locator('.nnx-row[data-path="layers[0].bias"] .c-mean')

    # ... and updates while the tracked loop runs (sampled inside the page every 50 ms).
    page.evaluate("""() => { window.__s = []; window.__t = setInterval(() => {
        const c = document.querySelector('.nnx-lab-viewer .nnx-row[data-path="layers[0].bias"] .c-mean');
        window.__s.push([Jupyter.notebook.get_cell(3).input_prompt_number === '*', c ? c.textContent : null]);
    }, 50); }""")
    _run_cell(page, 3)
    samples = page.evaluate("() => { clearInterval(window.__t); return window.__s; }")
    during = {text for busy, text in samples if busy}
    assert len(during) >= 3, f"the viewer did not update during the loop: {samples[:40]}"
    mean.filter(has_text="59").wait_for()  # the last step, once the cell ended
    # The logged loss's curve in the header: its buffers reach ipywidgets 7's front end.
    loss = viewer.locator('.nnx-scalar[data-name="loss"]')
    loss.locator(".nnx-scalar-step").filter(has_text="step 60").wait_for()
    assert loss.locator(".nnx-scalar-value").inner_text() == "29.5"

    # The split report.
    _run_cell(page, 4)
    report = page.locator(".output_area .nnx-lab-split-view").first
    report.wait_for(state="visible")
    assert "param" in report.inner_text()

    # A mode switch click reaches the model.
    _run_cell(page, 5)
    views = page.locator(".output_area .nnx-lab-views").first
    views.locator('button[data-mode="eval"]').click()
    deadline = time.monotonic() + 30
    while _kernel_eval(page, "model.layers[1].deterministic") != "True":
        assert time.monotonic() < deadline, "the eval click did not reach the model"
        page.wait_for_timeout(200)
    assert not page_events.page_errors, page_events.page_errors

    # Saved, and reopened where no widget front end runs: every widget shows its static fallback.
    page.evaluate("() => Jupyter.notebook.save_notebook()")
    page.wait_for_function("() => !Jupyter.notebook.dirty", timeout=30_000)
    saved = nbformat.read(classic_server.root_dir / path, as_version=4)
    widget_outputs = [
        o
        for c in saved.cells
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(widget_outputs) == 3 and all(o["data"].get("text/html") for o in widget_outputs)
    # No widget front end: the two nbextensions fail to load (as where no widget manager runs).
    page.route("**/nbextensions/jupyter-js-widgets/**", lambda route: route.abort())
    page.route("**/nbextensions/anywidget/**", lambda route: route.abort())
    _open(page, classic_server, path)
    page.locator(".output_area .nnx-lab-snapshot").first.wait_for(state="visible")
    page.locator(".output_area .nnx-lab-split").first.wait_for(state="visible")
    assert page.locator(".output_area .nnx-lab-viewer, .output_area .nnx-lab-views").count() == 0
    assert "layers[0].bias" in page.locator(".output_area .nnx-lab-snapshot").first.inner_text()
    assert "train" in page.locator(".output_area pre").last.inner_text()  # the mode panel's text
