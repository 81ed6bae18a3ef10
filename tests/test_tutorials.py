"""The tutorials (notebooks/*.ipynb) keep what they show: the documentation site renders each one
with its saved outputs (docs/tutorials.md), so a cell that displays something has its output saved,
and a widget's saved output carries the static copy (text/html) a reader without a kernel sees.

A cell displays something when (after IPython turns magics into Python):

- its last statement is an expression, not ended by ``;``, that is not a call (a name, an attribute,
  a tuple, a comparison...), or a call of a builtin that returns a value (``round``, ``sorted``...),
  of ``print``/``display``, or of a function of ``nnx_lab``;
- or any statement (inside loops, ``with``, ``if`` and ``try`` too, not inside a ``def`` or ``class``)
  prints (``print``/``display``), runs one of nnx_lab's magics (``%nnx_...`` / ``%%nnx_...``), or
  makes a widget that shows itself (``nnx_lab.watch(...)``, ``view_panel``, ``mode_toggle``,
  ``capture_panel``, without ``display=False``).

Any other call (``model.eval()``, which returns None) is not required to show anything.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import tokenize
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
SHOWN_ON_CREATION = {"watch", "view_panel", "mode_toggle", "capture_panel"}
PRINTERS = {"print", "display"}
# builtins that return None (or never return): a last-line call of any other builtin shows its value
NONE_BUILTINS = {"print", "exec", "setattr", "delattr", "help", "input", "breakpoint", "exit", "quit"}


def _quiet(python: str) -> bool:
    """IPython's rule: a cell whose last token (comments aside) is ``;`` displays no result."""
    tokens = [
        t
        for t in tokenize.generate_tokens(io.StringIO(python).readline)
        if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        and t.type != tokenize.ENDMARKER
    ]
    return bool(tokens) and tokens[-1].string == ";"


def _callee(call: ast.Call) -> tuple[str | None, str | None]:
    """(the called name, the module-ish name before it): print -> ('print', None), nnx_lab.watch -> ('watch', 'nnx_lab')."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id, None
    if isinstance(f, ast.Attribute):
        return f.attr, f.value.id if isinstance(f.value, ast.Name) else None
    return None, None


def _nnx_magic(call: ast.Call) -> bool:
    name, _ = _callee(call)
    return (
        name in ("run_line_magic", "run_cell_magic")
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and str(call.args[0].value).startswith("nnx_")
    )


def _printing_call(call: ast.Call) -> bool:
    name, owner = _callee(call)
    return (name in PRINTERS and owner is None) or _nnx_magic(call)


def _shows_itself(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    name, owner = _callee(value)
    hidden = any(
        k.arg == "display" and isinstance(k.value, ast.Constant) and k.value.value is False for k in value.keywords
    )
    return name in SHOWN_ON_CREATION and owner in ("nnx_lab", None) and not hidden


def _prints_somewhere(body: list[ast.stmt]) -> bool:
    """A statement that prints, runs an nnx magic or shows a widget, anywhere but inside a def or class."""
    todo: list[ast.AST] = list(body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Call) and _printing_call(n):
            return True
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and _shows_itself(n.value):
            return True
        todo.extend(ast.iter_child_nodes(n))
    return False


def _value_shown(value: ast.expr) -> bool:
    """Whether a last-line expression has a value to show."""
    if not isinstance(value, ast.Call):
        return True
    name, owner = _callee(value)
    if owner is None and name in vars(builtins):
        return name not in NONE_BUILTINS
    return owner == "nnx_lab" or _printing_call(value)


def displays(source: str) -> bool:
    """Whether a code cell's source displays something when run (the rule in this module's docstring).

    >>> displays("x = 1\\nx"), displays("x = 1\\nx;  # quiet"), displays("model.eval()"), displays("%load_ext nnx_lab")
    (True, False, False, False)
    >>> displays("%nnx_summary model (2, 8)"), displays("v = nnx_lab.watch(m)"), displays("v = nnx_lab.watch(m, display=False)")
    (True, True, False)
    >>> displays("for r in rows:\\n    print(r)"), displays("def f():\\n    print(1)"), displays("sorted(d)")
    (True, False, True)
    """
    python = TransformerManager().transform_cell(source)
    body = ast.parse(python).body
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Expr) and not _quiet(python) and _value_shown(last.value):
        return True
    return _prints_somewhere(body)


def _code_cells(path: Path) -> list[tuple[int, dict]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, c) for i, c in enumerate(cells) if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_displaying_cell_keeps_its_output(path):
    missing = [
        f"cell {i}: {''.join(c['source']).strip().splitlines()[-1]}"
        for i, c in _code_cells(path)
        if displays("".join(c["source"])) and not c.get("outputs")
    ]
    assert not missing, (
        f"{path.name}: cells that display something have no saved output (the docs show code only); "
        f"run the notebook and save it (jupyter nbconvert --to notebook --execute --inplace {path.name}): {missing}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_saved_widgets_carry_their_static_copy(path):
    bare = [
        f"cell {i}"
        for i, c in _code_cells(path)
        for out in c.get("outputs", [])
        if WIDGET in out.get("data", {}) and "text/html" not in out["data"]
    ]
    assert not bare, f"{path.name}: widget outputs saved without their text/html copy: {bare}"
