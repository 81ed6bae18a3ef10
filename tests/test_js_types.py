"""The front end's types catch what a person gets wrong: ``tsc`` (``npm test``, js/tsconfig.json) rejects JS
that misspells a field of a widget message, and JS that still uses a field Python renamed in
``nnx_lab/widgets/wire.py`` (the one source of the messages' types, written into js/src/shared/wire.d.ts by
tools/js_constants.py). Each test checks a copy of js/ with one change, so the tree itself is untouched."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import typing
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JS = REPO / "js"
TSC = JS / "node_modules" / "typescript" / "bin" / "tsc"


def _js_copy(tmp_path: Path) -> Path:
    node = shutil.which("node")
    if node is None or not TSC.exists():
        if os.environ.get("CI"):
            pytest.fail("node or js/node_modules/typescript is missing; CI installs them (npm ci in js/)")
        pytest.skip("node or typescript (npm ci in js/) not installed")
    copy = tmp_path / "js"
    shutil.copytree(JS / "src", copy / "src")
    shutil.copy(JS / "tsconfig.json", copy / "tsconfig.json")
    (copy / "node_modules").symlink_to(JS / "node_modules")
    return copy


def _tsc(js: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("node") or "node", str(TSC), "--noEmit", "-p", "."],
        cwd=js,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tsc_errors(js: Path) -> str:
    """tsc's output over the copy `js`, which must fail to check."""
    result = _tsc(js)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    return out


def _wire_tool():
    """tools/js_constants.py, loaded as a module (it writes wire.d.ts from Python's types)."""
    spec = importlib.util.spec_from_file_location("js_constants", REPO / "tools" / "js_constants.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def _tsc_with_wire(js: Path, tool) -> str:
    """tsc's failing output once the copy's wire.d.ts is what `tool` writes now."""
    (js / "src" / "shared" / "wire.d.ts").write_text(tool.wire_text(), encoding="utf-8")
    return _tsc_errors(js)


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_tsc_rejects_misspelled_message_fields_in_js(tmp_path):
    js = _js_copy(tmp_path)
    # a reply's field read under a wrong name, and a request sent with one
    _replace(js / "src" / "viewer.js", "msg.series ?", "msg.serie ?")
    _replace(
        js / "src" / "views.js", "requests.send({ type: MSG.MODE, mode }", "requests.send({ type: MSG.MODE, mod: mode }"
    )
    out = _tsc_errors(js)
    assert "src/viewer.js" in out and "'serie' does not exist on type 'Stats'" in out, out
    assert "src/views.js" in out and "'mod' does not exist in type 'ModeRequest'" in out, out


def test_tsc_rejects_js_that_uses_a_field_python_renamed(tmp_path, monkeypatch):
    js = _js_copy(tmp_path)
    tool = _wire_tool()
    from nnx_lab.widgets import wire

    # Python's history request names its statistic "statistic" now; the viewer still sends "stat"
    class HistoryRequest(typing.TypedDict):
        type: typing.Literal["history"]
        statistic: str

    monkeypatch.setattr(
        wire, "TO_PYTHON", tuple(HistoryRequest if c is wire.HistoryRequest else c for c in wire.TO_PYTHON)
    )
    assert "  statistic: string;" in tool.wire_text()
    out = _tsc_with_wire(js, tool)
    assert "src/viewer.js" in out and "'stat' does not exist in type 'HistoryRequest'" in out, out


def test_tsc_rejects_js_that_reads_a_trait_field_python_renamed(tmp_path, monkeypatch):
    """The synced traits' payloads (nnx_lab/widgets/traits.py) are written into wire.d.ts too."""
    js = _js_copy(tmp_path)
    tool = _wire_tool()
    from nnx_lab.widgets import traits

    # Python's viewer snapshot calls its gradients/optimizer columns "columns" now; the viewer reads "series"
    class ViewerSnapshot(traits.SnapshotPayload, total=False):
        columns: dict[str, typing.Any]

    monkeypatch.setattr(
        traits, "PAYLOADS", tuple(ViewerSnapshot if c is traits.ViewerSnapshot else c for c in traits.PAYLOADS)
    )
    assert "  columns?: Record<string, any>;" in tool.wire_text()
    out = _tsc_with_wire(js, tool)
    assert "src/viewer.js" in out and "'series' does not exist on type 'Partial<ViewerSnapshot>'" in out, out


def _rename_field(wire: Path, interface: str, field: str) -> None:
    """Rename ``field`` of ``interface`` in a copy's wire.d.ts, as a Python rename would write it."""
    text = wire.read_text(encoding="utf-8")
    start = text.index(f"export interface {interface} ")
    end = text.index("\n}", start)
    block = text[start:end]
    renamed = block.replace(f"\n  {field}:", f"\n  {field}_renamed:").replace(
        f"\n  {field}?:", f"\n  {field}_renamed?:"
    )
    assert renamed != block, (interface, field)
    wire.write_text(text[:start] + renamed + text[end:], encoding="utf-8")


@pytest.mark.parametrize(
    "interface, field, reader",
    [
        ("SummaryPayload", "rows", "src/summary/data.js"),
        ("ComparisonPayload", "modules", "src/compare/data.js"),
        ("LedgerPayload", "rows", "src/memory/data.js"),
        ("SplitReport", "rows", "src/split/data.js"),
        ("ViewsPayload", "classes", "src/views/data.js"),
        ("CaptureReport", "snapshot", "src/capture/data.js"),
        ("CaptureStatus", "level", "src/capture.js"),
        ("NonfiniteReport", "verdict", "src/nonfinite.js"),
    ],
)
def test_every_widget_reads_its_traits_typed(tmp_path, interface, field, reader):
    """Each widget's JS reads its synced payload as the type Python declares (traits.py -> wire.d.ts), so a
    field Python renames is an error where that widget reads it, not an empty panel in the browser."""
    js = _js_copy(tmp_path)
    _rename_field(js / "src" / "shared" / "wire.d.ts", interface, field)
    out = _tsc_errors(js)
    assert reader in out and f"'{field}' does not exist on type 'Partial<{interface}>'" in out, out
