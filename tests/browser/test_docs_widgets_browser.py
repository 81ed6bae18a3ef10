"""The docs site's tutorial pages in a real browser (issue 39 §3): the widgets of a tutorial that
saved its widget state are drawn by html-manager from that state, and a reader without the CDNs
sees each widget's static copy, never an empty box (docs/_ext/nnx_widgets.py).

One page is built (tutorial 09 with docs/conf.py, a few seconds), not the whole site.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from .conftest import REPO_ROOT, VIEWPORT, _unavailable
from .test_export_browser import _JS_DRAWN_AT_LEAST, CDN, NODE_MODULES, SETTLE_MS, _numbers, _widget_outputs

NOTEBOOK = REPO_ROOT / "notebooks" / "09_memory.ipynb"
# docs/conf.py loads html-manager from jsdelivr (nbconvert's pages: unpkg).
DOCS_CDN = [
    *CDN,
    (
        r"https://cdn\.jsdelivr\.net/npm/@jupyter-widgets/html-manager@[^/]+/dist/(?P<file>[\w.-]+)",
        "@jupyter-widgets/html-manager/dist/",
    ),
]

_JS_OUTPUTS = """() => {
    const shown = (el) => el.checkVisibility() && el.getClientRects().length > 0;
    return [...document.querySelectorAll('.nnx-lab-widget-output')].map((box) => {
        const drawn = box.querySelector('.widget-subarea [class*="nnx-"]');
        const copy = box.querySelector(':scope > .nnx-lab-static-copy');
        return {
            text: box.innerText.replace(/\\s+/g, ' ').trim(),
            drawn: drawn ? drawn.innerText.replace(/\\s+/g, ' ').trim() : null,
            rows: drawn ? [...drawn.querySelectorAll('tr, [data-path]')].filter(shown).length : 0,
            copy_shown: copy ? shown(copy) : null,
            copy_text: copy ? copy.innerText.replace(/\\s+/g, ' ').trim() : '',
        };
    });
}"""


@pytest.fixture(scope="module")
def docs_page(tmp_path_factory):
    """Tutorial 09's page of the docs site, built with docs/conf.py."""
    if os.environ.get("NNX_LAB_DOCS_TESTS"):  # .ci/run's docs step: myst-nb is installed there
        import myst_nb  # noqa: F401
    else:  # README's test run: myst-nb is a docs dependency (.ci/run runs this file in its docs step)
        pytest.importorskip("myst_nb")
    out = tmp_path_factory.mktemp("docs")
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-c", "docs", "-d", str(out / "doctrees")]
    cmd += ["-D", "root_doc=notebooks/09_memory", "-D", "include_patterns=notebooks/09_memory.ipynb"]
    # The local CDN's require.js is npm's, not cdnjs's file: built without the integrity hash (docs/conf.py).
    env = dict(os.environ, NNX_LAB_DOCS_LOCAL_CDN="1")
    done = subprocess.run(
        [*cmd, ".", str(out / "html")], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out / "html" / "notebooks" / "09_memory.html"


def _open(browser, path, *, network: bool):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    requested: list[str] = []

    def handle(route):
        url = route.request.url
        if url.startswith("file:"):
            return route.continue_()
        requested.append(url)
        for pattern, target in DOCS_CDN if network else []:
            m = re.fullmatch(pattern, url)
            if m:
                file = NODE_MODULES / target / m.group("file") if target.endswith("/") else NODE_MODULES / target
                if not file.is_file():
                    _unavailable(f"{file} (cd js && npm ci)")
                return route.fulfill(path=str(file), content_type="application/javascript")
        return route.abort()

    context.route("**/*", handle)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_timeout(SETTLE_MS)
    return page, context, requested, errors


def _saved_widgets():
    widgets = [w for w in _widget_outputs(json.loads(NOTEBOOK.read_text(encoding="utf-8"))) if w["saved"]]
    assert widgets, "tutorial 09 saves no widget state: this test checks nothing"
    return widgets


def test_docs_page_offline_shows_each_widgets_static_copy(browser, docs_page):
    """No network: every saved widget of the tutorial's page shows its static table, no empty box."""
    widgets = _saved_widgets()
    page, context, requested, _ = _open(browser, docs_page, network=False)
    try:
        boxes = page.evaluate(_JS_OUTPUTS)
        assert any("html-manager" in url for url in requested)  # the page asked for the CDN
        assert len(boxes) == len(widgets), boxes
        for i, (box, widget) in enumerate(zip(boxes, widgets, strict=True)):
            assert box["drawn"] is None and box["copy_shown"], f"widget {i}: {box}"
            head = "".join(widget["text"][:300].split())
            assert head and head in "".join(box["copy_text"].split()), f"widget {i}: {box['copy_text'][:200]!r}"
            assert len(_numbers(box["copy_text"])) >= 3, box["copy_text"][:200]
    finally:
        context.close()


def test_docs_page_draws_the_widgets_from_saved_state(browser, docs_page, screenshot):
    """With the CDNs (served from js/node_modules): html-manager draws each saved widget with the
    numbers of its static copy, and the static copy is hidden under it."""
    widgets = _saved_widgets()
    page, context, requested, errors = _open(browser, docs_page, network=True)
    try:
        page.wait_for_function(_JS_DRAWN_AT_LEAST, arg=len(widgets), timeout=60_000)
        boxes = page.evaluate(_JS_OUTPUTS)
        assert any("anywidget" in url for url in requested)
        assert len(boxes) == len(widgets)
        for i, (box, widget) in enumerate(zip(boxes, widgets, strict=True)):
            assert box["drawn"] and box["rows"] >= 1, f"widget {i}: {box}"
            assert len(_numbers(widget["text"]) & _numbers(box["drawn"])) >= 3, f"widget {i}: {box['drawn'][:200]!r}"
            assert box["copy_shown"] is False, f"widget {i}: static copy shown under the drawn widget"
        assert not [e for e in errors if "nnx" in e.lower() or "anywidget" in e.lower()], errors
        screenshot(page, "docs-09_memory", scroll_to=page.locator(".widget-subarea").first)
    finally:
        context.close()
