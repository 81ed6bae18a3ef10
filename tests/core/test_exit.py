"""A script that ends while nnx_lab's threads still work (a loop's last refresh on its way, a program
compiling) exits cleanly: the interpreter's exit waits for them instead of tearing them down inside
jax's C++ (which aborts the process with "terminate called after throwing ...")."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_exit_waits_for_a_thread_still_working(tmp_path):
    done = tmp_path / "done"
    got = run(f"""
        import time
        from nnx_lab.core._util import start_thread

        def work():
            time.sleep(1.0)  # still working when the script ends
            open({str(done)!r}, "w").write("finished")

        start_thread(work, "nnx_lab-test")
    """)
    assert got.returncode == 0, got.stderr
    assert done.read_text() == "finished"


def test_exit_stops_a_background_refresher_and_waits_for_it():
    got = run("""
        import atexit
        threads = []
        # atexit runs its handlers last-registered first: this one, registered before nnx_lab is
        # imported, runs after nnx_lab's.
        atexit.register(lambda: print("alive at exit:", threads[0].is_alive()))
        from flax import nnx
        import nnx_lab
        viewer = nnx_lab.watch(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), display=False)
        viewer.watcher.start_background()
        threads.append(viewer.watcher._thread)
        assert threads[0].is_alive()
    """)
    assert got.returncode == 0, got.stderr
    assert "alive at exit: False" in got.stdout
    assert "terminate called" not in got.stderr


def test_a_script_ending_right_after_a_loop_exits_cleanly():
    got = run("""
        from flax import nnx
        import nnx_lab
        model = nnx.Sequential(*[nnx.Linear(64, 64, rngs=nnx.Rngs(i)) for i in range(50)])
        viewer = nnx_lab.watch(model, display=False)

        @nnx.jit
        def step(model):
            for layer in model.layers:
                layer.kernel.value = layer.kernel.value * 0.999

        for _ in viewer.track(range(5)):
            step(model)
    """)
    assert got.returncode == 0, got.stderr
    assert "terminate called" not in got.stderr
