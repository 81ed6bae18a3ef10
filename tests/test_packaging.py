"""Packaging of the widgets' front end: the esbuild bundle is built by hatch_build.py and shipped.

- a wheel built from this tree carries nnx_lab/static/viewer.js and split.js, ES modules with a default
  export (anywidget's entry shape), with no HTML parsing and nothing loaded from a CDN;
- the JavaScript unit tests (js/test, node:test) pass, on fixtures tools/js_fixtures.py writes from
  this Python first (real payloads of real models, and Python's formatting of a corpus of values),
  so a payload change fails them until the front end follows. Without npm they are skipped, unless
  $CI is set, where missing npm is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JS = REPO / "js"
BUNDLE = "nnx_lab/static/viewer.js"
# Every widget bundle and the root class its front end draws.
BUNDLES = {
    BUNDLE: "nnx-lab-viewer",
    "nnx_lab/static/split.js": "nnx-lab-split-view",
    "nnx_lab/static/views.js": "nnx-lab-views",
    "nnx_lab/static/capture.js": "nnx-lab-capture",
    "nnx_lab/static/compare.js": "nnx-lab-compare",
    "nnx_lab/static/summary.js": "nnx-lab-summary-view",
    "nnx_lab/static/memory.js": "nnx-lab-memory-view",
}


def _need_npm() -> str:
    npm = shutil.which("npm")
    if npm and shutil.which("node"):
        return npm
    if os.environ.get("CI"):
        pytest.fail("node/npm are missing; CI needs them to build and test the widget front end")
    pytest.skip("node/npm not installed")


def _check_bundle(text: str, root_class: str = "nnx-lab-viewer") -> None:
    assert re.search(r"export\s*\{[^}]*\bas default\b[^}]*\}|export default\b", text), text[-300:]
    for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"):
        assert forbidden not in text, f"the bundle uses {forbidden}"
    assert not re.search(r"""(from\s*|import\s*\(\s*)["']https?://""", text), "the bundle imports from the network"
    assert root_class in text


def test_wheel_contains_the_viewer_bundle(tmp_path):
    _need_npm()
    cmd = [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp_path)]
    if importlib.util.find_spec("hatchling") is not None:
        cmd.append("--no-build-isolation")  # faster, and works offline when hatchling is installed
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    wheels = list(tmp_path.glob("nnx_lab-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as whl:
        names = whl.namelist()
        for bundle in BUNDLES:
            assert bundle in names, [n for n in names if "static" in n or n.endswith(".js")]
        assert not any("node_modules" in n or n.startswith("js/") for n in names)
        texts = {bundle: whl.read(bundle).decode("utf-8") for bundle in BUNDLES}
    for bundle, root_class in BUNDLES.items():
        _check_bundle(texts[bundle], root_class)


def test_js_unit_tests_pass(tmp_path):
    npm = _need_npm()
    fixtures = tmp_path / "fixtures"
    made = subprocess.run(
        [sys.executable, str(REPO / "tools" / "js_fixtures.py"), str(fixtures)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    result = subprocess.run(
        [npm, "test"],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", "NNX_LAB_FIXTURES": str(fixtures)},
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert re.search(r"^# fail 0$", out, re.M), out[-3000:]
    passed = re.search(r"^# pass (\d+)$", out, re.M)
    assert passed and int(passed.group(1)) > 0, out[-3000:]
