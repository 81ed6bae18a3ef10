"""Where there is no IPython shell (marimo, a script), the magics say so in one line (issue 39)."""

import importlib.util
import subprocess
import sys

import pytest

# Never imported here: nnx_lab's widgets take an imported marimo without an IPython shell for marimo's kernel.
needs_marimo = pytest.mark.skipif(importlib.util.find_spec("marimo") is None, reason="marimo is not installed")


def test_load_extension_without_ipython_says_so_in_one_line():
    # What a marimo cell gets trying `nnx_lab.load_ipython_extension(get_ipython())`: get_ipython() is None.
    code = (
        "import nnx_lab\n"
        "from IPython import get_ipython\n"
        "assert get_ipython() is None\n"
        "nnx_lab.load_ipython_extension(get_ipython())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: nnx_lab's magics (%nnx_watch, %nnx_summary, ...) are IPython's")
    assert "nnx_lab.watch(model)" in last


@needs_marimo
def test_load_extension_in_marimo_says_so(tmp_path):
    """A marimo notebook run as a script (marimo's kernel, no IPython shell): the cell's error is the line."""
    app = tmp_path / "app.py"
    app.write_text(
        "import marimo\n"
        "app = marimo.App()\n\n"
        "@app.cell\n"
        "def _():\n"
        "    import nnx_lab\n"
        "    from IPython import get_ipython\n"
        "    try:\n"
        "        nnx_lab.load_ipython_extension(get_ipython())\n"
        "    except RuntimeError as e:\n"
        "        print('said:', e)\n"
        "    return\n\n"
        "if __name__ == '__main__':\n"
        "    app.run()\n"
    )
    proc = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stdout.splitlines() if line.startswith("said: ")]
    assert len(said) == 1 and "are IPython's, and this is no IPython shell (marimo, a script)" in said[0], proc.stdout


@needs_marimo
def test_background_viewer_in_marimo_says_it_refreshes_on_tick_only(tmp_path):
    """marimo runs no cell hooks: the viewer's note must not promise a refresh after each cell."""
    app = tmp_path / "app.py"
    app.write_text(
        "import marimo\n"
        "app = marimo.App()\n\n"
        "@app.cell\n"
        "def _():\n"
        "    from flax import nnx\n"
        "    import nnx_lab\n"
        "    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\n"
        "    viewer = nnx_lab.watch(model, background=True, display=False)\n"
        "    print('said:', viewer.status['message'])\n"
        "    return\n\n"
        "if __name__ == '__main__':\n"
        "    app.run()\n"
    )
    proc = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    said = next(line for line in proc.stdout.splitlines() if line.startswith("said: "))
    assert "background refresh unavailable (not running in an IPython kernel)" in said, said
    assert "after each cell" not in said and "on tick()" in said, said
