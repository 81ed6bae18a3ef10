"""Run the suite on every supported flax: what needs a newer flax than the installed one is skipped
with a reason naming that flax, decided by nnx_lab.core.compat (the library's own version table).

- a test: ``@pytest.mark.needs_flax("nnx.view")`` (or ``pytestmark = ...`` for a whole file);
- a tutorial: ``"nnx_lab": {"needs_flax": "nnx.capture"}`` in the notebook's metadata;
- a doctest: by the module it is in (the capture modules need ``nnx.capture``), or by its name
  (``view_panel``'s needs ``nnx.view``);
- a file that cannot even be imported on an older flax: ``pytest.skip(compat.missing(...), allow_module_level=True)``.
"""

import functools
import json

import pytest

from nnx_lab.core import compat

_DOCTEST_NEEDS = {"capture": "nnx.capture"}  # a word in the module's name -> the flax feature
_DOCTEST_NAME_NEEDS = {"view_panel": "nnx.view"}  # a documented name -> the flax feature


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "needs_flax(feature): skipped when the installed flax lacks the feature (a key of nnx_lab.core.compat's table)",
    )
    config.addinivalue_line(
        "markers",
        "classic_notebook: drives the classic Notebook 6.5 (ipywidgets 7, as Colab) "
        "in headless Chromium; runs on Colab's stack",
    )


def _features(item) -> list[str]:
    found = [m.args[0] for m in item.iter_markers("needs_flax")]
    if type(item).__name__ == "DoctestItem":
        found += [f for word, f in _DOCTEST_NEEDS.items() if any(word in p for p in item.path.parts[-2:])]
        found += [f for name, f in _DOCTEST_NAME_NEEDS.items() if item.name.rsplit(".", 1)[-1] == name]
    elif str(item.fspath).endswith(".ipynb"):
        need = _notebook_needs(str(item.fspath))
        found += [need] if need else []
    return found


@functools.cache
def _notebook_needs(path: str) -> str | None:
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("metadata", {}).get("nnx_lab", {}).get("needs_flax")


def pytest_collection_modifyitems(config, items):
    for item in items:
        for feature in _features(item):
            reason = compat.missing(feature)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
