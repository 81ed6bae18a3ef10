"""The widgets' message types are written once (nnx_lab/widgets/wire.py): no Python sender or
handler under nnx_lab/widgets and no JS file under js/src spells one as a string literal (the JS
side imports them as MSG from the generated js/src/shared/constants.js, checked by
tests/test_js_generated.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from nnx_lab.core.capture import TOGGLE_MESSAGES
from nnx_lab.widgets import wire

REPO = Path(__file__).resolve().parents[2]
TYPES = set(wire.MESSAGES.values())
# `type: "ack"`, `type === "ack"`, `msg.type !== 'ack'`, and the same with the literal first.
_JS_TYPE = re.compile(
    r"""\btype\s*(?:===|!==|==|!=|:)\s*["'`](\w+)["'`]|["'`](\w+)["'`]\s*(?:===|!==|==|!=)\s*[\w.]*\btype\b"""
)


def js_literals(text: str) -> list[str]:
    """Message types written as literals in a `type` position of this JS source."""
    return [a or b for a, b in _JS_TYPE.findall(text) if (a or b) in TYPES]


def _is_type_read(node: ast.AST) -> bool:
    """``x.get("type")`` or ``x["type"]``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "type"
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "type"


def python_literals(text: str) -> list[str]:
    """Message types written as literals in this Python source: a ``"type":`` key's value, an
    ``@command(...)`` argument, or compared with ``x.get("type")`` / ``x["type"]``."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "type" and isinstance(v, ast.Constant):
                    found.append(v.value)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "command":
            found += [a.value for a in node.args if isinstance(a, ast.Constant)]
        elif isinstance(node, ast.Compare) and any(_is_type_read(n) for n in (node.left, *node.comparators)):
            for n in (node.left, *node.comparators):
                if isinstance(n, ast.Constant):
                    found.append(n.value)
                elif isinstance(n, (ast.Tuple, ast.List, ast.Set)):
                    found += [e.value for e in n.elts if isinstance(e, ast.Constant)]
    return [f for f in found if f in TYPES]


def test_the_scanners_see_literals_and_not_constants():
    js = 'send({ type: "refresh" }); if (msg.type === "ack") x(); if ("since" !== m.type) y(); h("b", { type: "button" });'
    assert js_literals(js) == ["refresh", "ack", "since"]
    assert js_literals("send({ type: MSG.REFRESH }); if (msg.type === MSG.ACK) x();") == []
    py = '@command("stats")\ndef f(c):\n    send({"type": "ack"})\n    return c.get("type") == "mode" or c["type"] in ("view",)\n'
    assert python_literals(py) == ["stats", "ack", "mode", "view"]
    assert (
        python_literals('"""{"type": "ack"}"""\n@command(wire.STATS)\ndef f(c):\n    send({"type": wire.ACK})\n') == []
    )


def test_no_js_file_writes_a_message_type_as_a_literal():
    files = [p for p in (REPO / "js" / "src").rglob("*.js") if p.name != "constants.js"]
    assert len(files) > 10
    found = {str(p.relative_to(REPO)): js_literals(p.read_text(encoding="utf-8")) for p in files}
    assert {k: v for k, v in found.items() if v} == {}, "use MSG from shared/constants.js"


def test_no_widget_module_writes_a_message_type_as_a_literal():
    files = [p for p in (REPO / "nnx_lab" / "widgets").glob("*.py") if p.name != "wire.py"]
    assert len(files) > 5
    found = {str(p.relative_to(REPO)): python_literals(p.read_text(encoding="utf-8")) for p in files}
    assert {k: v for k, v in found.items() if v} == {}, "use nnx_lab.widgets.wire"


def test_every_type_has_one_name_and_the_capture_toggles_agree():
    assert len(TYPES) == len(wire.MESSAGES)
    assert all(name.isupper() for name in wire.MESSAGES)
    # core/capture answers the toggles but stays free of widgets: its own list must be the wire's
    assert tuple(TOGGLE_MESSAGES) == wire.CAPTURE_TOGGLES
