"""tools/check_layering.py, which .ci/run runs: shared/tools/layering.py always exits 0, so CI's
verdict comes from its summary line. A package whose module imports another package's private module
fails the check and is named; the same package importing through the other package's face passes;
and nnx_lab itself passes (0 cycles, 0 private imports, 0 long files, 0 private modules taken across
packages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_layering", ROOT / "tools" / "check_layering.py")
check_layering = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_layering)

needs_tool = pytest.mark.skipif(
    not check_layering.TOOL.is_file(), reason="no shared/tools/layering.py beside the clone"
)


def _package(tmp_path: Path, importer: str) -> Path:
    """pkg/a/_inner.py (private to pkg.a), pkg/a/__init__.py exporting it, pkg/b/use.py importing it."""
    pkg = tmp_path / "pkg"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "_inner.py").write_text("VALUE = 1\n")
    (pkg / "a" / "__init__.py").write_text("from ._inner import VALUE\n")
    (pkg / "b" / "__init__.py").write_text("")
    (pkg / "b" / "use.py").write_text(importer)
    return pkg


@needs_tool
def test_a_private_module_taken_across_packages_fails_and_is_named(tmp_path, capsys):
    pkg = _package(tmp_path, "from ..a._inner import VALUE\n")
    assert check_layering.main([str(pkg)]) == 1
    out = capsys.readouterr()
    assert "pkg/b/use.py:1 imports pkg.a._inner" in out.out
    assert "1 private modules taken across packages" in out.out
    assert "every count must be 0" in out.err


@needs_tool
def test_importing_through_the_package_face_passes(tmp_path, capsys):
    pkg = _package(tmp_path, "from ..a import VALUE\n")
    assert check_layering.main([str(pkg)]) == 0
    assert "layering: 0 cycles, 0 private imports across modules" in capsys.readouterr().out


@needs_tool
def test_nnx_lab_passes(capsys):
    assert check_layering.main([str(ROOT / "nnx_lab")]) == 0, capsys.readouterr().out


def test_each_count_of_the_summary_line_fails_the_check(tmp_path):
    for line, expected in [
        (
            "layering: 0 cycles, 0 private imports across modules, 0 files over 400 lines, 0 private modules taken across packages",
            0,
        ),
        (
            "layering: 1 cycles, 0 private imports across modules, 0 files over 400 lines, 0 private modules taken across packages",
            1,
        ),
        (
            "layering: 0 cycles, 2 private imports across modules, 0 files over 400 lines, 0 private modules taken across packages",
            1,
        ),
        (
            "layering: 0 cycles, 0 private imports across modules, 3 files over 400 lines, 0 private modules taken across packages",
            1,
        ),
        (
            "layering: 0 cycles, 0 private imports across modules, 0 files over 400 lines, 4 private modules taken across packages",
            1,
        ),
        ("something else", 2),
    ]:
        tool = tmp_path / "fake_layering.py"
        tool.write_text(f"print({line!r})\n")
        assert check_layering.main([str(tmp_path), "--tool", str(tool)]) == expected, line


def test_a_missing_tool_is_an_error_not_a_pass(tmp_path, capsys):
    assert check_layering.main([str(tmp_path), "--tool", str(tmp_path / "absent.py")]) == 2
    assert "is missing" in capsys.readouterr().err
