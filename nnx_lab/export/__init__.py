"""HTML export (``jupyter nbconvert``) that keeps every nnx_lab widget visible.

nbconvert's ``lab`` and ``classic`` templates write a widget output as an empty box holding the
widget's view id whenever the notebook saved its widget state (JupyterLab's "Save Widget State
Automatically", ``nbconvert --execute`` with embedding); the box fills only once
``@jupyter-widgets/html-manager`` and anywidget's front end load from their CDNs. Where they cannot
(offline, a blocked CDN, a strict content policy) the reader sees nothing, although each widget
output carries its own static copy (``text/html``: plain tables, inline styles, no script).

``HTMLExporter`` writes that static copy under the widget's box, and a style rule hides it once the
widget has rendered from the saved state: the reader sees the live widget, or its table, never an
empty box. Outputs without saved state are unchanged (nbconvert already shows their ``text/html``).

    jupyter nbconvert --to nnx_lab_html notebook.ipynb                     # lab
    jupyter nbconvert --to nnx_lab_html --template classic notebook.ipynb

(``nnx_lab_html`` is this class's entry point in pyproject.toml; ``--to nnx_lab.export.HTMLExporter``
names it without one.)
"""

from __future__ import annotations

from pathlib import Path

from nbconvert.exporters.html import HTMLExporter as _NbconvertHTMLExporter
from traitlets import default, validate

__all__ = ["TEMPLATES", "HTMLExporter"]

#: The folder of nnx_lab's nbconvert templates: ``nnx_lab_lab`` and ``nnx_lab_classic``.
TEMPLATES = Path(__file__).parent / "templates"
_OURS = {"lab": "nnx_lab_lab", "classic": "nnx_lab_classic"}


class HTMLExporter(_NbconvertHTMLExporter):
    """nbconvert's HTML exporter whose ``lab``/``classic`` templates add each nnx_lab widget's static copy."""

    export_from_notebook = "HTML (nnx_lab widgets with their static copy)"

    @default("extra_template_basedirs")
    def _default_extra_template_basedirs(self):
        return [str(TEMPLATES), *super()._default_extra_template_basedirs()]

    @default("extra_template_paths")
    def _default_extra_template_paths(self):
        return [str(TEMPLATES)]  # nnx_lab_fallback.j2, the macros both templates import

    @validate("template_name")
    def _template_name_validate(self, proposal):
        # nbconvert's own validator (5.x ".tpl" names) has this name: one validator per trait name
        name = super()._template_name_validate(proposal)
        return _OURS.get(name, name)

    @default("template_name")
    def _template_name_default(self):
        return _OURS["lab"]
