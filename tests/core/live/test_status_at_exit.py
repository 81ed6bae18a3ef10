"""A kernel that restarts or shuts down clears its namespace at exit (IPython's atexit handler),
which collects every watched model: the viewer must not tell the browser "gone: the model was
garbage-collected" then (the front end says the kernel restarted)."""

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import atexit
    from flax import nnx
    ns = {"model": nnx.Linear(2, 2, rngs=nnx.Rngs(0))}
    atexit.register(ns.clear)  # as IPython's atexit_operations: registered before nnx_lab is imported
    from nnx_lab.core.watcher import Watcher
    watcher = Watcher(ns["model"])
    watcher.subscribe(lambda w: print("TOLD", w.state, w.status_line.message, flush=True))
    watcher.refresh(force=True)
    watcher.wait()
    print("READY", flush=True)
    """
)


def test_nothing_is_told_of_models_collected_as_the_interpreter_exits():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "READY" in lines and any(line.startswith("TOLD live") for line in lines), done.stdout
    after = lines[lines.index("READY") + 1 :]
    assert not [line for line in after if "gone" in line], done.stdout
