"""A notebook executed with its widget state saved (what `jupyter nbconvert --execute` and JupyterLab's
"Save Widget State Automatically" write), whose model's class name and attribute path are markup:
tests/test_export.py and tests/browser/test_export_browser.py export it."""

from __future__ import annotations

import sys

import nbformat
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EVIL_PATH = '<script>alert("path")</script>&amp;<img src=x onerror=alert(1)>'
EVIL_CLASS = "Evil<script>alert('class')</script>&<b>"

CELLS = [
    f"""
import jax.numpy as jnp
from flax import nnx
import nnx_lab

# hex, so that the cell's source (also on the exported page) does not hold the strings themselves
EVIL_PATH = bytes.fromhex("{EVIL_PATH.encode().hex()}").decode()
Evil = type(bytes.fromhex("{EVIL_CLASS.encode().hex()}").decode(), (nnx.Module,), {{"__call__": lambda self, x: getattr(self, EVIL_PATH)(x)}})
model = Evil()
setattr(model, EVIL_PATH, nnx.Linear(3, 2, rngs=nnx.Rngs(0)))
other = Evil()
setattr(other, EVIL_PATH, nnx.Linear(3, 2, rngs=nnx.Rngs(1)))
""",
    "viewer = nnx_lab.watch(model, stats=False)",
    "%load_ext nnx_lab\n%nnx_split model nnx.Param ...",
    "nnx_lab.summary(model, jnp.ones((1, 3)), memory=False)",
    "nnx_lab.compare(model, other)",
]
WIDGETS = len(CELLS) - 1


class _CurrentEnv(KernelSpecManager):
    """The kernel is this interpreter (as nbval's --nbval-current-env), whatever `python` is on PATH."""

    def get_kernel_spec(self, kernel_name):
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="current env",
            language="python",
        )


def execute(cwd) -> nbformat.NotebookNode:
    """The notebook, run in a fresh kernel of this interpreter, outputs and widget state saved."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src.strip()) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    km = KernelManager(kernel_name="python3", kernel_spec_manager=_CurrentEnv())
    client = NotebookClient(nb, km=km, timeout=300, store_widget_state=True, resources={"metadata": {"path": str(cwd)}})
    client.execute()
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    return nb
