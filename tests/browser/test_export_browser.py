"""Exported notebooks in a real browser (issue 39 §3, §4): what a reader of `jupyter nbconvert --to html`
sees, with and without the network, and the html-manager path VS Code's notebook renderer takes.

Every tutorial (notebooks/*.ipynb, saved executed) is exported with nbconvert's `lab` and `classic`
templates (nbconvert's own HTMLExporter, and nnx_lab.export.HTMLExporter) and opened from disk.

- Offline (every http(s) request refused, as on a machine without network or behind a blocking
  content policy): every widget output shows its static copy, a table with its real rows and
  numbers; no "Loading widget", no empty box.
- With the CDNs (served here from js/node_modules through Playwright's routing: require.js,
  jQuery, @jupyter-widgets/html-manager's embed-amd.js, anywidget's front end): the notebooks that
  saved their widget state (JupyterLab's "Save Widget State Automatically") show the widgets
  themselves, drawn by html-manager from that state through anywidget's ESM loading (what VS Code's
  renderer does with ipywidgets 8), with the same rows and numbers as their static copies, and the
  static copy hidden under a drawn widget.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from export_notebook import EVIL_CLASS, EVIL_PATH, WIDGETS, execute

from .conftest import REPO_ROOT, VIEWPORT, _unavailable

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
NODE_MODULES = REPO_ROOT / "js" / "node_modules"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
SETTLE_MS = 1_500  # after `load`: the page's own scripts (html-manager's render is awaited below)

# The CDN files an exported page asks for, and the npm packages (js/package.json) that hold them.
CDN = [
    (r"https://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[^/]+/require(\.min)?\.js", "requirejs/require.js"),
    (r"https://cdnjs\.cloudflare\.com/ajax/libs/jquery/[^/]+/jquery(\.min)?\.js", "jquery/dist/jquery.min.js"),
    (
        r"https://unpkg\.com/@jupyter-widgets/html-manager@[^/]+/dist/(?P<file>[\w.-]+)",
        "@jupyter-widgets/html-manager/dist/",
    ),
    (r"https://cdn\.jsdelivr\.net/npm/anywidget@[^/]+/dist/index\.js", "anywidget/dist/index.js"),
]


def _saved_state(nb: dict) -> dict:
    return nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def _text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


_NUMBER = re.compile(r"\d[\d,.]*(?:\s?(?:[KMGT]i?B|B|K|M|G))?\b")


def _numbers(text: str) -> set[str]:
    """The numbers (with their unit) a text shows: 21.5 MiB, 1.6K, 34..."""
    return {
        " ".join(m.group(0).split()) for m in _NUMBER.finditer(text) if not m.group(0).isdigit() or len(m.group(0)) > 1
    }


def _widget_outputs(nb: dict) -> list[dict]:
    """Each widget output's static copy: its text, and whether the notebook saved its state."""
    state = _saved_state(nb)
    found = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                html = "".join(data["text/html"]) if isinstance(data["text/html"], list) else data["text/html"]
                found.append({"text": _text(html), "saved": data[WIDGET_VIEW]["model_id"] in state})
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{(exporter, template, notebook name): path of the exported page}, made once."""
    from nbconvert.exporters import HTMLExporter

    from nnx_lab.export import HTMLExporter as OurExporter

    out = tmp_path_factory.mktemp("exported")
    pages = {}
    for exporter, cls in (("nbconvert", HTMLExporter), ("nnx_lab", OurExporter)):
        for template in ("lab", "classic"):
            for nb in NOTEBOOKS:
                body, _ = cls(template_name=template).from_filename(str(nb))
                path = out / f"{exporter}-{template}-{nb.stem}.html"
                path.write_text(body, encoding="utf-8")
                pages[exporter, template, nb.stem] = path
    return pages


def _route(network: bool, requested: list[str]):
    def handle(route):
        url = route.request.url
        if url.startswith("file:"):
            return route.continue_()
        requested.append(url)
        if network:
            for pattern, target in CDN:
                m = re.fullmatch(pattern, url)
                if m:
                    path = NODE_MODULES / target
                    if target.endswith("/"):
                        path = path / m.group("file")
                    if not path.is_file():
                        _unavailable(f"{path} (cd js && npm ci)")
                    return route.fulfill(path=str(path), content_type="application/javascript")
        return route.abort()

    return handle


def _open(browser, page_path: Path, *, network: bool, dialogs: list | None = None):
    """The exported page, loaded, its widgets given time to draw; (page, context, requested URLs, errors)."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    requested: list[str] = []
    context.route("**/*", _route(network, requested))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message) if dialogs is not None else None, d.dismiss()))
    page.goto(page_path.as_uri(), wait_until="load")
    page.wait_for_timeout(SETTLE_MS)
    return page, context, requested, errors


# Every widget output on the page: its box, whether it shows anything, and what a reader sees there.
_JS_WIDGET_BOXES = """() => {
    const shown = (el) => el.checkVisibility() && el.getClientRects().length > 0;
    const boxes = [...document.querySelectorAll('.jupyter-widgets, .output_widget_view')]
        .filter((box) => !box.parentElement.closest('.jupyter-widgets, .output_widget_view'));
    return boxes.map((box) => {
        const outer = box.closest('.nnx-lab-widget-output') || box;
        const drawn = box.querySelector('.widget-subarea [class*="nnx-"]');
        const copy = outer.querySelector(':scope > .nnx-lab-static-copy');
        return {
            text: outer.innerText.replace(/\\s+/g, ' ').trim(),
            drawn: drawn ? drawn.innerText.replace(/\\s+/g, ' ').trim() : null,
            rows: drawn ? [...drawn.querySelectorAll('tr, [data-path]')].filter(shown).length : 0,
            copy_shown: copy ? shown(copy) : null,
            height: outer.getBoundingClientRect().height,
        };
    });
}"""


# Resolves once n widgets have drawn (a .widget-subarea holding an element of nnx_lab's front end).
_JS_DRAWN_AT_LEAST = """(n) => [...document.querySelectorAll('.widget-subarea')]
    .filter((w) => w.querySelector('[class*="nnx-"]')).length >= n"""


def _page_text(page) -> str:
    return " ".join(page.evaluate("() => document.body.innerText").split())


@pytest.mark.parametrize("template", ["lab", "classic"])
@pytest.mark.parametrize("exporter", ["nbconvert", "nnx_lab"])
def test_offline_every_widget_shows_its_static_table(browser, exported, exporter, template):
    """No network: each widget output of each tutorial shows its static copy with its rows and numbers."""
    problems, checked, with_numbers = [], 0, 0
    for nb_path in NOTEBOOKS:
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        widgets = _widget_outputs(nb)
        if not widgets:
            continue
        if exporter == "nbconvert" and _saved_state(nb):
            continue  # nbconvert's own template: the next test shows the empty boxes it leaves
        page, context, _, _ = _open(browser, exported[exporter, template, nb_path.stem], network=False)
        try:
            text = _page_text(page)
            bare = "".join(text.split())  # cells' separators differ (tabs, spaces, none): compared without
            if "Loading widget" in text:
                problems.append(f"{nb_path.stem}: 'Loading widget' on the page")
            for box in page.evaluate(_JS_WIDGET_BOXES):
                if not box["text"]:
                    problems.append(f"{nb_path.stem}: an empty widget box ({box['height']:.0f}px)")
            for i, widget in enumerate(widgets):
                # what the reader sees holds the static copy's first 300 characters: title, header, rows
                head = widget["text"][:300]
                if "".join(head.split()) not in bare:
                    problems.append(f"{nb_path.stem} widget {i}: its static copy is not visible: {head[:80]!r}")
                checked += 1
                with_numbers += bool(_numbers(head))
        finally:
            context.close()
    assert checked >= 30 and with_numbers >= 20, f"only {checked} widget outputs checked ({with_numbers} with numbers)"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_saved_state_offline_nbconvert_leaves_empty_boxes_nnx_lab_export_does_not(browser, exported, template):
    """The saved-state tutorials offline: nbconvert's template leaves an empty box per widget (what
    a user found, and why nnx_lab.export exists); nnx_lab.export shows each static copy there."""
    stateful = [nb for nb in NOTEBOOKS if _saved_state(json.loads(nb.read_text(encoding="utf-8")))]
    assert stateful, "no tutorial saves its widget state: this test checks nothing"
    for nb_path in stateful:
        widgets = _widget_outputs(json.loads(nb_path.read_text(encoding="utf-8")))
        page, context, requested, _ = _open(browser, exported["nbconvert", template, nb_path.stem], network=False)
        try:
            boxes = page.evaluate(_JS_WIDGET_BOXES)
            assert any("html-manager" in url for url in requested)  # it tried the CDN
            assert sum(not b["text"] for b in boxes) == sum(w["saved"] for w in widgets) > 0
        finally:
            context.close()
        page, context, _, _ = _open(browser, exported["nnx_lab", template, nb_path.stem], network=False)
        try:
            boxes = page.evaluate(_JS_WIDGET_BOXES)
            assert len(boxes) == sum(w["saved"] for w in widgets)
            assert all(b["text"] and b["copy_shown"] and b["drawn"] is None for b in boxes), boxes
        finally:
            context.close()


@pytest.mark.parametrize("template", ["lab", "classic"])
@pytest.mark.parametrize("exporter", ["nbconvert", "nnx_lab"])
def test_saved_state_renders_the_widgets_through_html_manager(browser, exported, exporter, template, screenshot):
    """With the CDNs: html-manager draws each saved widget from the notebook's state (anywidget's
    front end runs the widget's ES module), with the rows and numbers of its static copy."""
    stateful = [nb for nb in NOTEBOOKS if _saved_state(json.loads(nb.read_text(encoding="utf-8")))]
    assert stateful
    viewers = 0
    for nb_path in stateful:
        widgets = [w for w in _widget_outputs(json.loads(nb_path.read_text(encoding="utf-8"))) if w["saved"]]
        page, context, requested, errors = _open(browser, exported[exporter, template, nb_path.stem], network=True)
        try:
            page.wait_for_function(
                _JS_DRAWN_AT_LEAST,
                arg=len(widgets),
                timeout=60_000,
            )
            boxes = page.evaluate(_JS_WIDGET_BOXES)
            assert any("anywidget" in url for url in requested)
            assert len(boxes) == len(widgets)
            for i, (box, widget) in enumerate(zip(boxes, widgets, strict=True)):
                assert box["drawn"] and box["rows"] >= 1, f"{nb_path.stem} widget {i}: {box}"
                shared = _numbers(widget["text"]) & _numbers(box["drawn"])
                assert len(shared) >= 3, f"{nb_path.stem} widget {i}: drawn {box['drawn'][:200]!r}"
                if exporter == "nnx_lab":
                    assert box["copy_shown"] is False, f"{nb_path.stem} widget {i}: static copy under the widget"
            assert not [e for e in errors if "nnx" in e.lower() or "anywidget" in e.lower()], errors
            # A viewer on the page (tutorial 10's) says it is a saved copy, not that a kernel restarted.
            statuses = page.evaluate(
                "() => [...document.querySelectorAll('.nnx-status')].map((s) => [s.dataset.state, s.innerText])"
            )
            assert all(st == "saved" and "restarted" not in text for st, text in statuses), statuses
            # ... and its paths have their column (cut to a letter when hidden columns took its room).
            path_widths = page.evaluate(
                """() => [...document.querySelectorAll('.nnx-lab-viewer th[data-col="path"]')]
                    .map((th) => th.getBoundingClientRect().width)"""
            )
            assert all(w >= 150 for w in path_widths), path_widths
            viewers += len(statuses)
            if template == "lab":
                screenshot(page, f"export-{exporter}-{nb_path.stem}", scroll_to=page.locator(".widget-subarea").first)
        finally:
            context.close()
    assert viewers >= 1  # tutorial 10 saved a viewer


# Elements the user's strings would make were they markup, and script elements that would run them.
_JS_INJECTED = """() => ({
    imgs: document.querySelectorAll('img[onerror]').length,
    scripts: [...document.querySelectorAll('script')]
        .filter((s) => !s.type || /javascript|module/.test(s.type))
        .filter((s) => s.textContent.includes('alert(')).length,
    drawn: [...document.querySelectorAll('.widget-subarea')]
        .filter((w) => w.querySelector('[class*="nnx-"]')).map((w) => w.innerText),
})"""


@pytest.mark.parametrize("network", [False, True], ids=["offline", "cdn"])
@pytest.mark.parametrize("exporter", ["nbconvert", "nnx_lab"])
def test_user_markup_in_an_exported_page_stays_text(browser, tmp_path, exporter, network):
    """A model whose class name and attribute path are markup, exported with its widget state: no
    script runs, no element is made from them, and the reader sees them as typed, in the static copy
    (offline) and in the widgets html-manager draws (VS Code's path)."""
    from nbconvert.exporters import HTMLExporter

    from nnx_lab.export import HTMLExporter as OurExporter

    nb = execute(tmp_path)
    cls = OurExporter if exporter == "nnx_lab" else HTMLExporter
    path = tmp_path / "hostile.html"
    path.write_text(cls(template_name="lab").from_notebook_node(nb)[0], encoding="utf-8")
    dialogs: list[str] = []
    page, context, _, _ = _open(browser, path, network=network, dialogs=dialogs)
    try:
        if network:
            page.wait_for_function(
                _JS_DRAWN_AT_LEAST,
                arg=WIDGETS,
                timeout=60_000,
            )
        found = page.evaluate(_JS_INJECTED)
        assert not dialogs and found["imgs"] == 0 and found["scripts"] == 0, (dialogs, found)
        text = page.evaluate("() => document.body.innerText")
        if network:
            assert len(found["drawn"]) == WIDGETS
            assert all(EVIL_PATH in t or EVIL_CLASS in t for t in found["drawn"]), found["drawn"]
            # The viewer (its saved ES module is this build's) says it is a saved copy, not that a
            # kernel restarted: there is no kernel behind the page.
            statuses = page.evaluate(
                "() => [...document.querySelectorAll('.nnx-status')].map((s) => [s.dataset.state, s.innerText])"
            )
            assert len(statuses) == 1, statuses
            state, status = statuses[0]
            assert state == "saved" and "a saved copy" in status and "restarted" not in status, statuses
        elif exporter == "nnx_lab":
            assert text.count(EVIL_PATH) >= 3 and EVIL_CLASS in text
        else:
            assert EVIL_PATH not in text  # nbconvert's empty boxes
    finally:
        context.close()
