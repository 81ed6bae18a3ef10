"""Exported notebooks (issue 39 §3): a notebook executed by nbclient with its widget state saved (what
`jupyter nbconvert --execute` and JupyterLab's "Save Widget State Automatically" write), whose model
has a class name and an attribute path made of markup, then exported to HTML.

- Every widget output's static copy (text/html: what GitHub, nbviewer and a page without the widget
  manager show) is self-contained, no script, no style sheet, nothing fetched, no event handler,
  and shows the user's strings as text.
- nnx_lab.export.HTMLExporter (lab and classic) puts that copy under each saved widget's box, and
  the page holds none of the user's markup as markup; nbconvert's own template leaves the box empty.
"""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from export_notebook import EVIL_CLASS, EVIL_PATH, WIDGET_STATE, WIDGET_VIEW, WIDGETS, execute
from nbconvert.exporters import HTMLExporter

from nnx_lab.export import HTMLExporter as NnxLabHTMLExporter


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    return execute(tmp_path_factory.mktemp("export-run"))


def _widget_outputs(nb):
    return [o for c in nb.cells for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]


class _Page(HTMLParser):
    """Tags, attributes, script elements (type, text) and the text a reader sees."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[str, str]] = []
        self.text: list[str] = []
        self._script_type: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "script":
            self._script_type = attrs.get("type", "text/javascript")
            self.scripts.append((self._script_type, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._script_type = None

    def handle_data(self, data):
        if self._script_type is not None:
            kind, text = self.scripts[-1]
            self.scripts[-1] = (kind, text + data)
        else:
            self.text.append(data)


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def test_every_widget_saved_its_state_and_a_static_copy(executed):
    outputs = _widget_outputs(executed)
    assert len(outputs) == WIDGETS
    state = executed.metadata["widgets"][WIDGET_STATE]["state"]
    for out in outputs:
        model = state[out.data[WIDGET_VIEW]["model_id"]]
        assert model["state"]["_anywidget_id"].startswith("nnx_lab.widgets.")
        assert out.data["text/html"].strip()


def test_static_copies_are_self_contained_and_show_user_strings_as_text(executed):
    for out in _widget_outputs(executed):
        html = out.data["text/html"]
        page = _parse(html)
        name = page.tags[0][1].get("class", page.tags[0][0]) if page.tags else "?"
        where = f"the static copy of {name}"
        assert not page.scripts, where
        assert not [t for t, _ in page.tags if t in {"style", "link", "iframe", "object", "embed", "img", "meta"}], (
            where
        )
        handlers = [(t, a) for t, a in page.tags for a in a if a.startswith("on")]
        assert not handlers, f"{where}: {handlers}"
        fetched = [
            (t, k, v) for t, attrs in page.tags for k, v in attrs.items() if k in {"src", "href"} or "url(" in (v or "")
        ]
        assert not fetched, f"{where}: {fetched}"
        # no markup of the user's became an element, and what the reader sees holds the strings as typed
        assert "<script" not in html.lower() and "<img" not in html.lower(), where
        text = "".join(page.text)
        assert EVIL_PATH in text or EVIL_CLASS in text, f"{where} shows neither user string: {text[:300]!r}"


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_nnx_lab_export_shows_each_static_copy_and_no_user_markup(executed, template):
    html, _ = NnxLabHTMLExporter(template_name=template).from_notebook_node(executed)
    page = _parse(html)
    copies = [a for t, a in page.tags if "nnx-lab-static-copy" in (a.get("class") or "").split()]
    assert len(copies) == WIDGETS
    for kind, body in page.scripts:  # the page's own scripts; the user's strings only in JSON
        if kind in ("text/javascript", "module"):
            assert "alert(" not in body, body[:200]
    assert EVIL_PATH not in html and EVIL_CLASS not in html  # as markup nowhere, in JSON escaped
    text = "".join(page.text)
    assert text.count(EVIL_PATH) >= 3 and EVIL_CLASS in text  # the static copies show them as text
    assert not [t for t, a in page.tags if t == "img" and "onerror" in a]


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_nbconvert_template_leaves_the_saved_widgets_without_their_copy(executed, template):
    """Why nnx_lab.export exists: nbconvert's own page has only the view id where each widget goes."""
    html, _ = HTMLExporter(template_name=template).from_notebook_node(executed)
    assert "nnx-lab-static-copy" not in html
    text = "".join(_parse(html).text)
    assert EVIL_PATH not in text and html.count(f'<script type="{WIDGET_VIEW}">') == WIDGETS


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_jupyter_nbconvert_to_nnx_lab_html_exports_a_tutorial_with_its_static_copies(tmp_path, template):
    """The command the docs give, on a tutorial that saved its widget state (pyproject's entry point)."""
    tutorial = Path(__file__).resolve().parents[1] / "notebooks" / "10_nonfinite.ipynb"
    saved = _widget_outputs(nbformat.read(tutorial, as_version=4))
    assert saved, "tutorial 10 shows no widget"
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "nnx_lab_html", "--template", template]
    subprocess.run([*cmd, "--output-dir", str(tmp_path), str(tutorial)], check=True, capture_output=True, timeout=120)
    page = _parse((tmp_path / "10_nonfinite.html").read_text(encoding="utf-8"))
    copies = [a for t, a in page.tags if "nnx-lab-static-copy" in (a.get("class") or "").split()]
    assert len(copies) == len(saved)
    text = " ".join("".join(page.text).split())
    first = " ".join("".join(_parse(saved[0].data["text/html"]).text).split())
    assert first[:120] in text  # the viewer's table: title, header, first rows
