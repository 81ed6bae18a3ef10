"""A script that ends while nnx_lab's threads still work (a loop's last refresh on its way, a program
compiling) exits cleanly: the interpreter's exit waits for them instead of tearing them down inside
jax's C++ (which aborts the process with "terminate called after throwing ...", or crashes it).

A crash at exit depends on timing (about one exit in ten to three on a loaded machine): CI runs these
tests ``NNX_LAB_EXIT_RUNS`` times each (.ci/run: 20)."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _runs() -> int:
    text = os.environ.get("NNX_LAB_EXIT_RUNS", "1")
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"NNX_LAB_EXIT_RUNS must be a positive integer, got {text[:40]!r}")
    return int(text)


@pytest.fixture(autouse=True, params=range(1, _runs() + 1), ids=lambda i: f"run{i}")
def attempt(request):
    """Every test of this module, once per run asked for."""
    return request.param


def run(code: str, **env_vars: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env_vars)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=300
    )


def test_exit_waits_for_a_thread_still_working(tmp_path):
    done = tmp_path / "done"
    got = run(f"""
        import time
        from nnx_lab.core.live.threads import start_thread

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
        threads.append(viewer.watcher.engine.thread)
        assert threads[0].is_alive()
    """)
    assert got.returncode == 0, got.stderr
    assert "alive at exit: False" in got.stdout
    assert "terminate called" not in got.stderr


def test_a_script_ending_right_after_a_loop_exits_cleanly(tmp_path):
    # Its own kernel cache: every run ends while the update ratio's program compiles (on jax 0.7.2,
    # seconds for these 100 arrays); a program kept on disk by an earlier run would load at once.
    got = run(
        """
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
    """,
        NNX_LAB_CACHE_DIR=str(tmp_path / "kernels"),
    )
    assert got.returncode == 0, got.stderr
    assert "terminate called" not in got.stderr
    assert "may abort" not in got.stderr  # the exit did not give up on a thread
    assert "Exception ignored" not in got.stderr  # nothing of ours ran half torn down (a weakref callback)


def test_threads_are_done_before_atexit_handlers_of_modules_imported_later(tmp_path):
    # jax imported after nnx_lab registers its atexit clean_up (which clears the backends) after
    # nnx_lab's: atexit runs it first. nnx_lab's threads must be finished before any of them.
    got = run("""
        import atexit, time
        from nnx_lab.core.live.threads import start_thread
        done = []

        def work():
            time.sleep(1.0)
            done.append(True)

        start_thread(work, "nnx_lab-test")
        atexit.register(lambda: print("done before atexit handlers:", done == [True]))  # as jax's would be
    """)
    assert got.returncode == 0, got.stderr
    assert "done before atexit handlers: True" in got.stdout


def test_a_thread_asked_for_during_exit_runs_nothing(tmp_path):
    # A published refresh starts its update ratio's compile on a thread of its own: asked for while
    # the exit waits, it would still be inside XLA when jax is torn down. It runs nothing instead,
    # and the exit does not wait for work nobody will use.
    ran = tmp_path / "ran"
    got = run(f"""
        import atexit, threading
        # registered before nnx_lab is imported: runs after nnx_lab's exit wait
        atexit.register(lambda: print("alive after the wait:",
                                      [t.name for t in threading.enumerate() if t.name.startswith("nnx_lab")]))
        import time
        from nnx_lab.core.live.threads import exiting, start_thread

        def second():
            time.sleep(1.0)
            open({str(ran)!r}, "w").write("ran")

        def first():
            while not exiting():  # the main thread has finished: the interpreter's exit has begun
                time.sleep(0.01)
            start_thread(second, "nnx_lab-second")

        start_thread(first, "nnx_lab-first")
    """)
    assert got.returncode == 0, got.stderr
    assert "alive after the wait: []" in got.stdout
    assert not ran.exists()
