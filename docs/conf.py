"""Sphinx configuration of nnx_lab's documentation site.

Built from the repository root with this folder as the configuration directory, so that the
tutorials in notebooks/ are pages of the site without being copied or linked:

    pip install -e ".[docs]" && sphinx-build -W --keep-going -b html -c docs . docs/_build/html

The notebooks are rendered with the outputs saved in them (nothing is executed).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import nnx_lab  # noqa: E402  (after the path change above)

project = "nnx_lab"
author = "nnx_lab contributors"
copyright = "nnx_lab contributors"
release = version = nnx_lab.__version__

# The source directory is the repository root: only docs/ and the tutorials are pages.
root_doc = "docs/index"
include_patterns = ["docs/**", "notebooks/*.ipynb", "benchmarks/README.md"]
exclude_patterns = [
    "docs/_build",
    "**/.ipynb_checkpoints",
    ".venv*",
    "venv",
    "js",
    "nnx_lab",
    "tests",
    "tools",
    "ci",
    "build",
    "dist",
    "test-artifacts",
    ".git",
]

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "nnx_api",  # docs/_ext/nnx_api.py: the API page's entries, from nnx_lab.__all__ and the magics
    "nnx_widgets",  # docs/_ext/nnx_widgets.py: saved widgets drawn by html-manager, static copy under
]

# Tutorials: the outputs saved in the notebook, never executed here (nbval checks they are right).
nb_execution_mode = "off"
# A widget's saved output is its model id plus a static text/HTML table. Where the notebook saved
# its widget state, docs/_ext/nnx_widgets.py writes html-manager's widget view with the table under
# it (hidden once the widget draws, shown where the CDN does not load); elsewhere the site shows the
# table (what GitHub shows).
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
# html-manager 1.x (ipywidgets 8) draws the saved widgets; anywidget's front end from the same CDN.
# require.js is myst-nb's default, with its integrity hash; tests/browser/test_docs_widgets_browser.py
# builds with NNX_LAB_DOCS_LOCAL_CDN=1 (no hash) to serve npm's require.js in its place (no network there).
_REQUIRE = {"crossorigin": "anonymous"}
if not os.environ.get("NNX_LAB_DOCS_LOCAL_CDN"):
    _REQUIRE["integrity"] = "sha256-Ae2Vz/4ePdIu6ZyI/5ZGsYnb+m0JlOmKPjt6XZ9JJkA="
nb_ipywidgets_js = {
    "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js": _REQUIRE,
    "https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.15/dist/embed-amd.js": {
        "data-jupyter-widgets-cdn": "https://cdn.jsdelivr.net/npm/",
        "crossorigin": "anonymous",
    },
}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# Docstrings name flax, jax and IPython types that are not in this site: no cross-reference
# warnings for them (every reference inside the site is checked by tools/check_docs_links.py).
nitpicky = False
intersphinx_mapping = {}

html_theme = "sphinx_book_theme"
html_title = "nnx_lab"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
}
# The site's pages live under docs/ and notebooks/; index.html at the top forwards to docs/index.
html_extra_path = ["_extra"]
# nnx_lab_widgets.css (hides a drawn widget's static copy): the same file nnx_lab.export inlines
html_static_path = [str(Path(nnx_lab.__file__).parent / "export" / "templates" / "nnx_lab_widgets.css")]
html_last_updated_fmt = None
