"""The tutorials' widgets on the docs site: drawn from the saved widget state, never an empty box.

myst-nb writes a widget output whose notebook saved its widget state as html-manager's bare
``<script type="application/vnd.jupyter.widget-view+json">``: the box fills only once
``@jupyter-widgets/html-manager`` and anywidget's front end load from their CDNs, and stays empty
where they cannot (offline, a blocked CDN). Each nnx_lab widget output also carries its own static
copy (``text/html``: plain tables, inline styles, no script).

This post-transform runs before myst-nb picks one mime type per output (SelectMimeType): for an
nnx_lab widget whose model is in the notebook's saved state it writes the widget view and the
static copy under it, in a ``.nnx-lab-widget-output`` box; ``nnx_lab/export/templates/nnx_lab_widgets.css`` hides
the copy once html-manager has drawn the widget (the same design as ``nnx_lab.export``). Other
widget outputs keep myst-nb's choice (conf.py's ``nb_mime_priority_overrides``: the static copy).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@lru_cache(maxsize=64)
def _nnx_lab_models(path: str, mtime: float) -> frozenset[str]:
    """The model ids of nnx_lab widgets in a notebook's saved widget state."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return frozenset(
        model_id
        for model_id, model in state.items()
        if str(model.get("state", {}).get("_anywidget_id") or "").startswith("nnx_lab.")
    )


def _by_mime(bundle: nodes.Element) -> dict[str, nodes.Element]:
    return {child.get("mime_type"): child for child in bundle.children if isinstance(child, nodes.container)}


class WidgetWithStaticCopy(SphinxPostTransform):
    """Writes each saved nnx_lab widget as its view plus its static copy (see the module docstring)."""

    default_priority = 3  # before myst-nb's SelectMimeType (4) drops all but one mime type
    formats = ("html",)

    def run(self, **kwargs):
        source = Path(self.env.doc2path(self.env.docname))
        if source.suffix != ".ipynb":
            return
        models = _nnx_lab_models(str(source), source.stat().st_mtime)
        if not models:
            return
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            found = _by_mime(bundle)
            view, html = found.get(WIDGET_VIEW), found.get("text/html")
            if view is None or html is None:
                continue
            raw = view.astext()
            start = raw.find("{")
            try:
                model_id = json.loads(raw[start : raw.rindex("}") + 1].replace("<\\/", "</")).get("model_id")
            except ValueError:
                continue
            if model_id not in models:
                continue
            box = nodes.container(classes=["nnx-lab-widget-output"])
            box += view.children
            copy = nodes.container(classes=["nnx-lab-static-copy"])
            copy += html.children
            box += copy
            bundle.replace_self(box)


def setup(app):
    app.add_post_transform(WidgetWithStaticCopy)
    app.add_css_file("nnx_lab_widgets.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
