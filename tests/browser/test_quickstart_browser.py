"""The quickstart and the snapshot's HTML in a real browser: JupyterLab (light and dark) and Notebook 7."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

QUICKSTART = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart.ipynb"
HEADERS = ("path", "type", "shape", "dtype", "bytes", "mean")
EVIL_CLASS = "Evil<img src=x onerror=alert(1)>"
EVIL_KEY = "<script>alert(2)</script>"

_JS_TABLES = """(root) => Array.from(root.querySelectorAll('table')).map(t =>
    Array.from(t.querySelectorAll('tr')).map(r => Array.from(r.querySelectorAll('th,td')).map(c => c.textContent.trim())))"""

# An element's colour, and the background it is painted on: translucent backgrounds of its ancestors
# composited onto the first opaque one (white if none), as rgb().
_JS_COLORS = """(el) => {
    const rgba = (css) => {
        const m = css.match(/rgba?\\(([^)]*)\\)/);
        const p = m ? m[1].split(/[ ,\\/]+/).filter(Boolean).map(parseFloat) : [0, 0, 0, 0];
        return p.length > 3 ? p : [...p, 1];
    };
    const layers = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
        const c = rgba(getComputedStyle(node).backgroundColor);
        if (c[3] > 0) layers.push(c);
        if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255];
    for (const [r, g, b, a] of layers.reverse()) bg = [r, g, b].map((v, i) => a * v + (1 - a) * bg[i]);
    return {color: getComputedStyle(el).color, background: `rgb(${bg.map(Math.round).join(', ')})`,
            layers: layers.map(l => l.join(','))};
}"""


def snapshot_tables(page) -> list[list[list[str]]]:
    """Every table of every rendered `.nnx-lab-snapshot` output, as rows of cell texts."""
    snaps = page.locator(".jp-OutputArea-output .nnx-lab-snapshot")
    return [table for i in range(snaps.count()) for table in snaps.nth(i).evaluate(_JS_TABLES)]


def variables_table(page) -> list[list[str]]:
    """The first snapshot table whose header row has the per-Variable columns."""
    tables = snapshot_tables(page)
    for table in tables:
        if table and all(h in table[0] for h in HEADERS):
            return table
    raise AssertionError(
        f"no .nnx-lab-snapshot table with headers {HEADERS}; headers seen: {[t[0] for t in tables if t]}"
    )


def output_text(page) -> str:
    return "\n".join(page.locator(".jp-Notebook .jp-OutputArea").all_inner_texts())


def _rgb(css: str) -> tuple[float, ...]:
    parts = [float(p) for p in re.split(r"[,\s/]+", re.fullmatch(r"rgba?\((.*)\)", css.strip()).group(1)) if p]
    return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG contrast ratio of CSS colour `fg` (alpha-blended onto `bg`) against `bg`."""
    b, f = _rgb(bg)[:3], _rgb(fg)
    f = [f[3] * f[i] + (1 - f[3]) * b[i] for i in range(3)]

    def luminance(rgb):
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(f), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def open_in_dark_theme(page, jupyter_server, open_notebook, notebook) -> None:
    """Open `notebook` in JupyterLab with the JupyterLab Dark theme applied."""
    with jupyter_server.user_setting("@jupyterlab/apputils-extension:themes", {"theme": "JupyterLab Dark"}):
        open_notebook(page, jupyter_server, notebook, ui="lab")
    page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached", timeout=30_000)


def assert_readable(root, selectors) -> None:
    """The first match of each selector under `root` has WCAG contrast >= 4.5 against its background."""
    for selector in selectors:
        colors = root.locator(selector).first.evaluate(_JS_COLORS)
        ratio = contrast_ratio(colors["color"], colors["background"])
        assert ratio >= 4.5, f"{selector} is hard to read on the dark theme: {colors}, contrast {ratio:.2f}"


def assert_quickstart_rendered(page):
    table = variables_table(page)
    header, rows = table[0], table[1:]
    row = next((r for r in rows if r[0] == "blocks[0].linear.kernel"), None)
    assert row is not None, f"no row for blocks[0].linear.kernel in {[r[0] for r in rows]}"
    cells = dict(zip(header, row))
    assert (cells["type"], cells["shape"], cells["dtype"]) == ("Param", "(16, 32)", "float32"), cells


def write_notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def test_quickstart_in_jupyterlab(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot):
    open_notebook(page, jupyter_server, QUICKSTART, ui="lab")
    run_all_cells(page)

    assert_quickstart_rendered(page)
    snap = page.locator(".jp-OutputArea-output .nnx-lab-snapshot").first
    screenshot(page, "lab-quickstart-snapshot", scroll_to=snap)

    banner = page.locator(".jp-OutputArea-output").get_by_text("NaN/Inf in value.kernel")
    banner.first.scroll_into_view_if_needed()
    assert banner.first.is_visible(), "the NaN/Inf banner is not visible"
    screenshot(page, "lab-quickstart-nan-banner")
    assert not page_events.script_dialogs, page_events.dialogs


def test_snapshot_html_escapes_user_strings(
    page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot, tmp_path
):
    nb = write_notebook(
        tmp_path / "xss.ipynb",
        "import sys\nfrom flax import nnx\nimport jax.numpy as jnp\nimport nnx_lab\nprint(sys.prefix)",
        "class Evil(nnx.Module):\n"
        "    def __init__(self):\n"
        f"        self.d = nnx.Dict({{{EVIL_KEY!r}: nnx.Param(jnp.ones(2))}})\n\n"
        f"Evil.__name__ = {EVIL_CLASS!r}\n"
        "model = Evil()",
        "nnx_lab.snapshot(model)",
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    snap = page.locator(".jp-OutputArea-output .nnx-lab-snapshot")
    snap.first.wait_for(state="visible")
    page.wait_for_timeout(1000)  # an <img onerror> would have fired by now

    text = output_text(page)
    assert sys.prefix in text, f"the kernel is not this environment's python ({sys.prefix}): {text[:300]!r}"
    snap_text = snap.first.inner_text()
    assert EVIL_CLASS in snap_text, snap_text
    assert EVIL_KEY in snap_text, snap_text
    # JupyterLab rewrites a relative src ("x" -> "/files/<dir>/x?_xsrf=...") before the image loads, so
    # img[src="x"] alone would miss an unescaped tag: look for any image or handler in the outputs too.
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator(".jp-OutputArea img").count() == 0, snap.first.inner_html()
    assert page.locator(".jp-OutputArea [onerror], .jp-OutputArea script").count() == 0, snap.first.inner_html()
    screenshot(page, "lab-xss-escaped", scroll_to=snap.first)
    assert page_events.dialogs == [], f"a script ran: {page_events.dialogs}"


def test_harness_sees_injected_script(page, page_events, jupyter_server, open_notebook, run_all_cells, tmp_path):
    """Positive control for the XSS test: unescaped HTML in an output does run here, and is seen."""
    nb = write_notebook(
        tmp_path / "control.ipynb", "from IPython.display import HTML\nHTML('<img src=x onerror=\"alert(3)\">')"
    )
    open_notebook(page, jupyter_server, nb, ui="lab")
    run_all_cells(page)
    page.locator(".jp-OutputArea img[onerror]").wait_for(state="attached")
    for _ in range(50):
        if page_events.dialogs:
            break
        page.wait_for_timeout(100)
    assert page_events.dialogs == [("alert", "3")]


def test_quickstart_in_jupyterlab_dark(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot):
    open_in_dark_theme(page, jupyter_server, open_notebook, QUICKSTART)
    run_all_cells(page)

    assert_quickstart_rendered(page)
    assert page.locator("body").get_attribute("data-jp-theme-light") == "false"
    snap = page.locator(".jp-OutputArea-output .nnx-lab-snapshot").first
    screenshot(page, "lab-dark-quickstart-snapshot", scroll_to=snap)
    for selector in ("th", "td", "b"):
        el = snap.locator(selector).first
        colors = el.evaluate(_JS_COLORS)
        ratio = contrast_ratio(colors["color"], colors["background"])
        assert colors["color"] != colors["background"], (selector, colors)
        assert ratio >= 4.5, f"{selector} text is hard to read on the dark theme: {colors}, contrast {ratio:.2f}"


def test_quickstart_in_notebook7(page, page_events, jupyter_server, open_notebook, run_all_cells, screenshot):
    open_notebook(page, jupyter_server, QUICKSTART, ui="notebook")
    assert page.locator('body[data-notebook="notebooks"]').count() == 1, "not the Notebook 7 app"
    run_all_cells(page)

    assert_quickstart_rendered(page)
    snap = page.locator(".jp-OutputArea-output .nnx-lab-snapshot").first
    screenshot(page, "notebook7-quickstart-snapshot", scroll_to=snap)
    assert not page_events.script_dialogs, page_events.dialogs
