"""The package imports cheaply; %load_ext / %reload_ext / unload leave exactly what they should."""

import subprocess
import sys


def test_import_and_load_ext_do_not_import_jax():
    code = (
        "import sys, nnx_lab\n"
        "assert 'jax' not in sys.modules, 'import nnx_lab imported jax'\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "ip.run_line_magic('load_ext', 'nnx_lab')\n"
        "assert 'nnx_snapshot' in ip.magics_manager.magics['line']\n"
        "assert 'jax' not in sys.modules, '%load_ext nnx_lab imported jax'\n"
        "ip.run_cell('x = 1')\n"  # after the cell: the cell hooks ran and drained the queue of widget messages
        "assert 'jax' not in sys.modules, 'a cell after %load_ext nnx_lab imported jax'\n"
        "print('clean')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "clean", proc.stderr


MAGICS = {
    ("line", "nnx_snapshot"),
    ("line", "nnx_watch"),
    ("line", "nnx_split"),
    ("cell", "nnx_split"),
    ("line", "nnx_mode"),
    ("line", "nnx_view"),
    ("cell", "nnx_capture"),
    ("line", "nnx_compare"),
    ("line", "nnx_summary"),
    ("line", "nnx_memory"),
    ("cell", "nnx_nonfinite"),
}


def ours(shell):
    return {
        (kind, name)
        for kind, table in shell.magics_manager.magics.items()
        for name, fn in table.items()
        if type(getattr(fn, "__self__", None)).__module__ == "nnx_lab.magics"
    }


def test_reload_leaves_one_copy_and_unload_removes_all(ip):
    assert ours(ip) == MAGICS
    ip.run_line_magic("reload_ext", "nnx_lab")
    ip.run_line_magic("reload_ext", "nnx_lab")
    assert ours(ip) == MAGICS
    assert list(ip.magics_manager.registry).count("NnxLabMagics") == 1
    ip.run_line_magic("unload_ext", "nnx_lab")
    assert ours(ip) == set() and "NnxLabMagics" not in ip.magics_manager.registry
    ip.run_line_magic("load_ext", "nnx_lab")


def test_unload_removes_the_configurable_and_reload_leaves_one(ip):
    def instances():
        return [c for c in ip.configurables if type(c).__name__ == "NnxLabMagics"]

    assert len(instances()) == 1
    ip.run_line_magic("reload_ext", "nnx_lab")
    assert len(instances()) == 1
    ip.run_line_magic("unload_ext", "nnx_lab")
    assert instances() == []
    ip.run_line_magic("load_ext", "nnx_lab")
