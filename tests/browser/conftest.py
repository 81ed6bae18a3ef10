"""Real-browser harness: a JupyterLab server on a temporary root, driven by headless Chromium.

Fixtures
    jupyter_server  session: `python -m jupyter lab` on 127.0.0.1, a free port, a random token and a
                    temporary root, settings and workspaces dir. The kernel is this environment's
                    python3 and JupyterLab finds the widget extensions under sys.prefix/share/jupyter.
    browser         session: Debian's /usr/bin/chromium through Playwright (never a downloaded
                    browser). Missing chromium fails the tests when $CI is set and skips them otherwise.
    page            function: a fresh browser context and page; every dialog, console error and page
                    error is recorded in `page_events`. Kernels are shut down after each test.

Helper fixtures (each returns a function)
    open_notebook(page, server, notebook_path, ui="lab"|"notebook") copies the notebook into a fresh
    folder of the server root (so a fresh kernel), opens it and waits for the kernel to be idle;
    run_all_cells(page) uses Run > Run All Cells and waits until every code cell ran and the kernel is
    idle; screenshot(page, name, scroll_to=None) writes test-artifacts/browser/NAME.png. A failing
    test leaves FAILED-<test>.png there, and the server log is copied there at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 1000}

SERVER_START_TIMEOUT_S = 60
PAGE_LOAD_TIMEOUT_S = 60
KERNEL_READY_TIMEOUT_S = (
    180  # a first kernel in a fresh venv on a loaded 2-core machine (compiling .pyc, importing jax)
)
RUN_ALL_TIMEOUT_S = 180

# Settings every page gets: no news/update toast over the screenshots, and no network attempts.
_BASE_SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets the `page` fixture know whether the test failed, to leave a screenshot behind.
    report = yield
    setattr(item, f"_nnx_report_{report.when}", report)
    return report


def _unavailable(reason: str):
    message = f"browser tests need {reason}"
    if os.environ.get("CI"):
        pytest.fail(message + " ($CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(message)


# ---------------------------------------------------------------------------------------- server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings_file(settings_dir: Path, plugin_id: str) -> Path:
    package, _, plugin = plugin_id.partition(":")
    return settings_dir.joinpath(*package.split("/"), f"{plugin}.jupyterlab-settings")


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (the server's kernels), from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            ppid = int(text[text.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass
class JupyterServer:
    base_url: str
    token: str
    root_dir: Path
    settings_dir: Path
    log_path: Path
    proc: subprocess.Popen = field(repr=False)

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}?token={self.token}"

    def api(self, path: str, method: str = "GET", timeout: float = 10):
        req = urllib.request.Request(
            self.base_url + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def add_notebook(self, source: str | os.PathLike, name: str | None = None) -> str:
        """Copy a notebook into a fresh folder of the root; return its server path (fresh kernel session)."""
        source = Path(source)
        folder = self.root_dir / f"t-{uuid.uuid4().hex[:8]}"
        folder.mkdir()
        shutil.copyfile(source, folder / (name or source.name))
        return f"{folder.name}/{name or source.name}"

    def write_setting(self, plugin_id: str, values: dict) -> None:
        path = _settings_file(self.settings_dir, plugin_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))

    @contextlib.contextmanager
    def user_setting(self, plugin_id: str, values: dict):
        """Use these settings for pages opened inside the block (they are read on page load)."""
        path = _settings_file(self.settings_dir, plugin_id)
        before = path.read_text() if path.exists() else None
        self.write_setting(plugin_id, values)
        try:
            yield
        finally:
            if before is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(before)

    def session(self, path: str) -> dict | None:
        return next((s for s in self.api("/api/sessions") if s.get("path") == path), None)

    def shutdown_sessions(self) -> None:
        for s in self.api("/api/sessions"):
            with contextlib.suppress(urllib.error.URLError, OSError):
                self.api(f"/api/sessions/{s['id']}", method="DELETE", timeout=30)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        procs = _descendants(self.proc.pid)
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):  # shuts kernels down, then the server
                self.api("/api/shutdown", method="POST")
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
        deadline = time.monotonic() + 5
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = [p for p in procs if _alive(p)]
            for p in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, sig)
            while left and time.monotonic() < deadline:
                time.sleep(0.1)
                left = [p for p in left if _alive(p)]


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("jupyter")
    dirs = {name: base / name for name in ("root", "settings", "workspaces", "config", "data", "runtime", "ipython")}
    for d in dirs.values():
        d.mkdir()
    token = secrets.token_hex(16)
    port = _free_port()
    server_env = dict(
        os.environ,
        # User-level dirs go to tmp so no personal config, kernelspec or settings leaks in; the
        # environment's own dirs (sys.prefix/share/jupyter: python3 kernelspec, ipywidgets and
        # anywidget labextensions; sys.prefix/etc/jupyter: server extensions) stay on the path.
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PLATFORM_DIRS="0",
        PYTHONUNBUFFERED="1",
    )
    server_env.pop("JUPYTER_PATH", None)
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={dirs['root']}",
        f"--LabApp.user_settings_dir={dirs['settings']}",
        f"--LabApp.workspaces_dir={dirs['workspaces']}",
        f"--JupyterNotebookApp.user_settings_dir={dirs['settings']}",
        f"--JupyterNotebookApp.workspaces_dir={dirs['workspaces']}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = base / "server.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        cmd,
        cwd=dirs["root"],
        env=server_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = JupyterServer(
        base_url=f"http://127.0.0.1:{port}",
        token=token,
        root_dir=dirs["root"],
        settings_dir=dirs["settings"],
        log_path=log_path,
        proc=proc,
    )
    for plugin_id, values in _BASE_SETTINGS.items():
        server.write_setting(plugin_id, values)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                server.api("/api/status", timeout=2)
                break
            except (urllib.error.URLError, OSError, ValueError):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"jupyter lab did not answer /api/status in {SERVER_START_TIMEOUT_S} s:\n{server.log_tail()}"
                    ) from None
                time.sleep(0.25)
        yield server
    finally:
        server.stop()
        log.close()
        if ARTIFACTS.is_dir():
            with contextlib.suppress(OSError):
                shutil.copyfile(log_path, ARTIFACTS / "jupyter-server.log")


# --------------------------------------------------------------------------------------- browser


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        _unavailable(f"{CHROMIUM} (Debian's chromium: apt-get install -y chromium; .ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable('the playwright Python package (pip install -e ".[test]")')
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@dataclass
class PageEvents:
    dialogs: list[tuple[str, str]] = field(default_factory=list)  # (type, message), every one
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    @property
    def script_dialogs(self) -> list[tuple[str, str]]:
        """alert/confirm/prompt: what injected script would open (beforeunload is the app's own)."""
        return [d for d in self.dialogs if d[0] != "beforeunload"]


@pytest.fixture
def page_events() -> PageEvents:
    return PageEvents()


@pytest.fixture
def page(browser, jupyter_server, page_events, request):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    pg = context.new_page()

    def on_dialog(dialog):
        page_events.dialogs.append((dialog.type, dialog.message))
        with contextlib.suppress(Exception):
            dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("console", lambda m: page_events.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: page_events.page_errors.append(str(e)))
    try:
        yield pg
    finally:
        report = getattr(request.node, "_nnx_report_call", None)
        if report is not None and report.failed:
            with contextlib.suppress(Exception):
                _screenshot(pg, f"FAILED-{_safe_name(request.node.name)}")
        context.close()
        with contextlib.suppress(Exception):
            jupyter_server.shutdown_sessions()


# --------------------------------------------------------------------------------------- helpers


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def _screenshot(page, name: str, *, scroll_to=None) -> Path:
    """Save the viewport as test-artifacts/browser/NAME.png, first scrolling `scroll_to` into view."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if scroll_to is not None:
        scroll_to.scroll_into_view_if_needed()
        page.wait_for_timeout(200)  # let the windowed notebook paint what scrolled in
    path = ARTIFACTS / f"{_safe_name(name)}.png"
    page.screenshot(path=str(path))
    return path


_JS_INDICATORS = """() => Array.from(document.querySelectorAll('.jp-Notebook-ExecutionIndicator'))
    .map(e => e.getAttribute('data-status'))"""

_JS_PROMPTS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt'))
    .map(e => e.textContent.trim())"""


def _wait_for_kernel_idle(page, server: JupyterServer, path: str, timeout_s: float = KERNEL_READY_TIMEOUT_S):
    """Wait until the server says the notebook's kernel is idle with a client attached, and the page's
    execution indicator says idle too, twice in a row (the indicator flips idle→connecting→idle)."""
    deadline = time.monotonic() + timeout_s
    streak, state = 0, None
    while True:
        sess = server.session(path)
        kernel = (sess or {}).get("kernel") or {}
        indicators = page.evaluate(_JS_INDICATORS)
        state = {
            "kernel": kernel.get("execution_state"),
            "connections": kernel.get("connections"),
            "indicators": indicators,
        }
        ok = (
            state["kernel"] == "idle"
            and (state["connections"] or 0) >= 1
            and bool(indicators)
            and all(s == "idle" for s in indicators)
        )
        streak = streak + 1 if ok else 0
        if streak >= 2:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"kernel for {path} not idle after {timeout_s} s: {state}\n{server.log_tail(15)}")
        page.wait_for_timeout(300)


def _open_notebook(page, server: JupyterServer, notebook_path, ui: str = "lab", *, name: str | None = None) -> str:
    """Copy `notebook_path` into the server root, open it in JupyterLab ("lab") or Notebook 7
    ("notebook"), and wait for its kernel to be idle. Returns the notebook's server path."""
    if ui not in ("lab", "notebook"):
        raise ValueError(f"ui must be 'lab' or 'notebook', not {ui!r}")
    path = server.add_notebook(notebook_path, name)
    quoted = urllib.parse.quote(path)
    if ui == "lab":
        # A fresh workspace per page: nothing restored from an earlier test's layout.
        url = server.url(f"/lab/workspaces/w-{uuid.uuid4().hex[:8]}/tree/{quoted}")
    else:
        url = server.url(f"/notebooks/{quoted}")
    page.goto(url, wait_until="domcontentloaded", timeout=PAGE_LOAD_TIMEOUT_S * 1000)
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(
        state="visible", timeout=PAGE_LOAD_TIMEOUT_S * 1000
    )
    _wait_for_kernel_idle(page, server, path)
    return path


# Set before the click: flips on the first "[*]" prompt, so a fast run cannot slip past unseen.
_JS_WATCH_RUN = """() => {
    window.__nnxRunStarted = false;
    const busy = () => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt'))
        .some(e => e.textContent.includes('*'));
    const obs = new MutationObserver(() => {
        if (busy()) { window.__nnxRunStarted = true; obs.disconnect(); }
    });
    obs.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

_JS_RUN_FINISHED = """() => !Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt'))
    .some(e => e.textContent.includes('*'))"""


def _run_all_cells(page, timeout_s: float = RUN_ALL_TIMEOUT_S) -> list[str]:
    """Run > Run All Cells from the menu bar (JupyterLab and Notebook 7 alike) and wait until no cell
    shows [*] and the kernel is idle. Raises, with the error outputs, unless every code cell ran."""
    page.evaluate(_JS_WATCH_RUN)
    page.locator(".lm-MenuBar-item").filter(has_text=re.compile(r"^\s*Run\s*$")).click()
    item = page.locator(
        '.lm-Menu-item[data-command="runmenu:run-all"], .lm-Menu-item[data-command="notebook:run-all-cells"]'
    ).first
    item.wait_for(state="visible")
    if "lm-mod-disabled" in (item.get_attribute("class") or ""):
        raise AssertionError("Run All Cells is disabled: is the notebook the current widget?")
    item.click()
    # Park the pointer on the status bar: a pointer left over an output would :hover-tint a table row.
    page.mouse.move(VIEWPORT["width"] // 2, VIEWPORT["height"] - 2)
    page.wait_for_function("() => window.__nnxRunStarted === true", timeout=15_000)
    page.wait_for_function(_JS_RUN_FINISHED, timeout=timeout_s * 1000)
    page.wait_for_function(f"() => ({_JS_INDICATORS})().every(s => s === 'idle')", timeout=30_000)
    prompts = page.evaluate(_JS_PROMPTS)
    if not prompts or not all(re.fullmatch(r"\[\d+\]:?", p) for p in prompts):
        raise AssertionError(f"not every code cell ran: prompts {prompts}\nerrors:\n" + "\n".join(_error_outputs(page)))
    return prompts


def _error_outputs(page) -> list[str]:
    """Texts of outputs that hold a Python traceback."""
    texts = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
    return [t for t in texts if "Traceback" in t or "Error" in t]


@pytest.fixture(scope="session")
def open_notebook():
    """open_notebook(page, server, notebook_path, ui="lab"|"notebook") -> the notebook's server path."""
    return _open_notebook


@pytest.fixture(scope="session")
def run_all_cells():
    """run_all_cells(page) -> the code cells' prompts, once all ran and the kernel is idle."""
    return _run_all_cells


@pytest.fixture(scope="session")
def screenshot():
    """screenshot(page, name, scroll_to=None) -> test-artifacts/browser/NAME.png."""
    return _screenshot
