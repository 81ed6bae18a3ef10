"""``nnx_lab.core`` is UI-free (issue 26): no module of it imports IPython or a widget library,
at import time or later, and all of it works where none is installed; the shell's namespace is
read through ``core.shell`` only."""

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import nnx_lab.core

CORE = Path(nnx_lab.core.__file__).parent
UI = ("IPython", "ipywidgets", "anywidget", "ipykernel")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):  # function bodies too: a lazy import is still an import
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_no_core_module_imports_a_ui_library():
    offenders = {
        str(path.relative_to(CORE)): sorted(m for m in imported_modules(path) if m.split(".")[0] in UI)
        for path in CORE.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_every_core_module_imports_and_snapshots_without_any_ui_library():
    # (flax itself imports IPython where it is installed: so blocked here, as in a script's environment without it)
    names = [m.name for m in pkgutil.walk_packages([str(CORE)], "nnx_lab.core.")]
    code = "import importlib, sys\n"
    code += "".join(f"sys.modules[{m!r}] = None\n" for m in UI)
    code += "".join(f"importlib.import_module({n!r})\n" for n in names)
    code += "from flax import nnx\nfrom nnx_lab.core.snapshot import snapshot\n"
    code += "print(len(snapshot(nnx.Linear(2, 3, rngs=nnx.Rngs(0))).rows))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "2"
