"""Installing nnx_lab on Google Colab changes none of Colab's own packages (ci/colab.txt)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parents[1]


def colab_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "ci" / "colab.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"ci/colab.txt: {line!r} is not name==version"
            pins[canonicalize_name(name)] = version
    return pins


def test_every_dependency_range_admits_colabs_pin():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = colab_pins()
    refused = [
        f"{req} refuses Colab's {req.name}=={pins[canonicalize_name(req.name)]}"
        for req in map(Requirement, project["dependencies"])
        if canonicalize_name(req.name) in pins
        and not req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True)
    ]
    assert not refused
    assert {"flax", "jax", "ipython", "ipywidgets", "anywidget", "traitlets"} <= {
        canonicalize_name(Requirement(r).name) for r in project["dependencies"]
    }


def _on_colabs_stack() -> bool:
    try:
        return all(importlib.metadata.version(n) == v for n, v in colab_pins().items())
    except importlib.metadata.PackageNotFoundError:
        return False


def test_pip_install_changes_no_pinned_package(tmp_path):
    if not _on_colabs_stack():
        why = "needs a venv holding ci/colab.txt's pins (.ci/run makes one)"
        if os.environ.get("NNX_LAB_COLAB_STACK"):  # .ci/run's Colab stack: this check must run there
            pytest.fail(f"NNX_LAB_COLAB_STACK is set but this venv does not hold Colab's pins: {why}")
        pytest.skip(why)
    # What a Colab user types (no constraints file): pip's report lists what it would install.
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    installs = {
        canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    changed = {n: f"{colab_pins()[n]} -> {v}" for n, v in installs.items() if n in colab_pins()}
    assert not changed, f"installing nnx_lab would change Colab's pinned packages: {changed}"
    assert "nnx-lab" in installs
    print(f"pip install --dry-run on Colab's stack would install: {sorted(installs.items())}")


def test_ci_runs_readmes_test_commands_verbatim():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("# ") and line.endswith("verbatim:")]
    commands = [next(x for x in lines[i:] if "python -m pytest" in x) for i in starts]
    assert len(commands) == 2 and all("python -m pytest" in c for c in commands)
    readme = (ROOT / "README.md").read_text()
    assert all(f"\n{c}\n" in readme for c in commands)
