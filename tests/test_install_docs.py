"""The install lines a user copies work: nnx_lab is not on the package index yet, so README, the
documentation and the tutorials' Colab cells lead with what works (a clone, which needs Node.js >= 18
with npm, or the wheel ``python -m build --wheel`` makes, which ci/wheel_without_node.sh installs
where there is no node or npm); ``pip install nnx_lab`` appears only as what works once published,
and every wheel they name is the one this version builds."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
WHEEL = f"nnx_lab-{VERSION}-py3-none-any.whl"
# pip install nnx_lab / "nnx_lab[checkpoint]" / -q nnx_lab: the package from the index (not a file, not ".")
FROM_INDEX = re.compile(r"""pip install(?:\s+-\S+)*\s+["']?nnx_lab(?:\[[^\]]*\])?["']?(?=[\s`"'\\]|$)""")
WHEEL_NAME = re.compile(r"nnx_lab-[^\s`\"'\\/]*\.whl")


def _texts() -> dict[str, str]:
    """README, the docs' pages (the changelog records what was said then) and the tutorials."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "notebooks").glob("*.ipynb"))]
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for p in paths
        if "_build" not in p.parts and p.name != "changelog.md"
    }


def test_no_install_from_the_index_before_it_is_published():
    offending = [
        f"{name}: {line.strip()}"
        for name, text in _texts().items()
        for line in text.splitlines()
        if FROM_INDEX.search(line) and "published" not in line
    ]
    assert not offending, f"nnx_lab is not on the index yet; say what works (a clone or a wheel): {offending}"


def test_every_wheel_named_is_the_one_this_version_builds():
    named = {(name, wheel) for name, text in _texts().items() for wheel in WHEEL_NAME.findall(text)}
    assert {name for name, _ in named} >= {"README.md", "docs/index.md", "docs/colab.md"}, named
    stale = sorted((name, wheel) for name, wheel in named if wheel != WHEEL)
    assert not stale, f"python -m build --wheel makes {WHEEL}: {stale}"


def test_every_tutorial_installs_the_wheel_on_colab():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"%pip install -q {WHEEL}" in path.read_text(encoding="utf-8"), path.name


def test_readme_says_what_installing_from_a_clone_needs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install") : readme.index("\n## ", readme.index("## Install") + 1)]
    first_command = next(
        line
        for block in re.findall(r"```bash\n(.*?)```", install, re.S)
        for line in block.splitlines()
        if line[:1] != "#"
    )
    assert first_command.split("#")[0].strip() == "pip install .", first_command
    assert "Node.js" in install and "≥ 18" in install and "npm" in install
    assert "python -m build --wheel" in install and f"pip install dist/{WHEEL}" in install
