"""Issue 35 §6: ``%reload_ext nnx_lab`` while a viewer is on screen: the viewer keeps refreshing
after cells, also when the package was imported again first (an upgrade in a running kernel, a
module reload), and a viewer closed afterwards stops. Each case runs in a fresh interpreter (a
re-imported package would leave two copies of nnx_lab's classes in this one)."""

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import importlib, json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "nnx_lab")
ip.run_cell("from flax import nnx\nmodel = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\nmodel.kernel[...] = 1.0")
ip.run_line_magic("nnx_watch", "model --as viewer")
viewer = ip.user_ns["viewer"]

def seen():  # what the viewer shows: its refresh count and the kernel's max
    snap = viewer.last_snapshot
    row = next(r for r in snap.rows if r.path_text == "kernel")
    return viewer.status["refreshes"], float(row.stats["max"])

out = {"before": seen()}
HOW = "__HOW__"
if HOW == "reimport":  # the package imported again (as after an upgrade), then %reload_ext
    for name in [m for m in sys.modules if m == "nnx_lab" or m.startswith("nnx_lab.")]:
        del sys.modules[name]
elif HOW == "module_reload":  # cell_hooks reloaded in place (autoreload), then %reload_ext
    importlib.reload(sys.modules["nnx_lab._ipython.cell_hooks"])
ip.run_line_magic("reload_ext", "nnx_lab")
ip.run_cell("model.kernel[...] = 2.0")
out["after_reload"] = seen()
ip.run_cell("model.kernel[...] = 3.0")
out["next_cell"] = seen()
ip.run_line_magic("nnx_watch", "model --as second")  # a viewer made by the reloaded package
second = ip.user_ns["second"]
viewer.close()
ip.run_cell("model.kernel[...] = 4.0")
second.last_snapshot
out["closed"] = seen()
out["second"] = second.status["refreshes"]
print(json.dumps(out))
"""


@pytest.mark.parametrize("how", ["plain", "reimport", "module_reload"])
def test_a_viewer_keeps_refreshing_after_reload_ext(how):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("__HOW__", how)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    (n0, max0), (n1, max1), (n2, max2), (n3, max3) = (
        out["before"],
        out["after_reload"],
        out["next_cell"],
        out["closed"],
    )
    assert max0 == 1.0
    assert (max1, max2) == (2.0, 3.0) and n2 > n1 > n0  # refreshed after each cell since the reload
    assert (n3, max3) == (n2, 3.0)  # closed: no refresh after the next cell
    assert out["second"] >= 2  # the reloaded package's own viewer refreshes too
