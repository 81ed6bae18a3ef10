"""A checkpoint's statistics stream: reads in flight within the bound, and the progress they report."""

from __future__ import annotations

import math
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nnx_lab.core.checkpoint import (
    MAX_IN_FLIGHT,
    NotebookProgress,
    Progress,
    auto_progress,
    checkpoint_rows,
    in_notebook,
    read_blocks,
    read_plan,
)

ocp = pytest.importorskip("orbax.checkpoint", reason="orbax-checkpoint is the checkpoint extra")


def save(path, tree, chunk_byte_size=None) -> str:
    checkpointer = ocp.StandardCheckpointer()
    state = nnx.state(tree)
    args = {}
    if chunk_byte_size:
        args["save_args"] = jax.tree.map(lambda _: ocp.SaveArgs(chunk_byte_size=chunk_byte_size), state)
    checkpointer.save(path, state, **args)
    checkpointer.wait_until_finished()
    return str(path)


class Reads:
    """A stand-in tensorstore: counts the blocks read and not yet handed back, and the most at once."""

    def __init__(self, data: np.ndarray):
        self.data, self.open, self.most = data, 0, 0

    def __getitem__(self, index):
        reads = self

        class Future:
            def result(self):
                return reads.data[index]

        class Read:
            def read(self):
                reads.open += 1
                reads.most = max(reads.most, reads.open)
                return Future()

        return Read()


@pytest.mark.parametrize(
    "shape, chunk_bytes, stored",
    [((256, 64), 16 * 1024, (16, 64)), ((256, 64), 16 * 1024, (256, 64)), ((7, 5, 3), 64, None), ((40,), 4096, (8,))],
)
def test_reads_in_flight_stay_within_three_times_the_bound(shape, chunk_bytes, stored):
    data = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    reads = Reads(data)
    block, in_flight = read_plan(shape, 4, chunk_bytes, stored)
    stored_bytes = math.prod(stored) * 4 if stored else 0
    assert 0 <= in_flight <= MAX_IN_FLIGHT
    # a read in flight holds the stored bytes and the decoded block; the caller its block and a piece's copy
    assert 2 * in_flight * block + block + min(block, chunk_bytes // 4) <= 3 * max(chunk_bytes, stored_bytes, block)
    seen = np.zeros(shape, int)
    for index, got in read_blocks(reads, shape, 4, chunk_bytes, stored):
        # held by the caller now: this block and the reads in flight behind it
        assert reads.open <= in_flight + 1 and got.nbytes <= block
        np.testing.assert_array_equal(got, data[index])
        seen[index] += 1
        reads.open -= 1
    assert (seen == 1).all() and reads.open == 0
    blocks_count = int(seen.size * 4 / block) if block else 0
    if blocks_count > in_flight:
        assert reads.most == in_flight + 1  # reads really overlap: the window is used


def test_progress_reports_every_block_and_a_final_report(tmp_path):
    path = save(tmp_path / "ckpt", {"w": nnx.Param(jnp.ones((64, 32))), "b": nnx.Param(jnp.zeros((32,)))}, 1024)
    seen: list[Progress] = []
    rows = checkpoint_rows(path, chunk_bytes=1024, progress=seen.append)
    total = 64 * 32 * 4 + 32 * 4
    assert seen[-1].done and seen[-1].bytes_done == seen[-1].bytes_total == total
    assert (seen[-1].arrays_done, seen[-1].arrays_total) == (2, 2)
    assert len(seen) > 8 and all(not p.done for p in seen[:-1])
    done = [p.bytes_done for p in seen]
    assert done == sorted(done) and all(p.rate >= 0 for p in seen)
    assert seen[-1].text().startswith("checkpoint statistics: 2 arrays, 0.0 MiB read in ")
    assert [r["stats"]["mean"] for r in rows.rows] in ([1.0, 0.0], [0.0, 1.0])


def test_a_failing_progress_callback_is_logged_and_the_rows_stay_ok(tmp_path, caplog):
    path = save(tmp_path / "ckpt", {"w": nnx.Param(jnp.ones((8, 8)))})

    def broken(p):
        raise RuntimeError("display gone")

    rows = checkpoint_rows(path, progress=broken)
    assert [r["status"] for r in rows.rows] == ["ok"]
    assert "progress display failed" in caplog.text


class Handle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, bundle):
        self.shown.append(("update", bundle))


def test_notebook_progress_shows_one_line_updated_in_place_and_ends_with_the_result():
    shown: list = []

    def display(bundle):
        shown.append(("display", bundle))
        return Handle(shown)

    show = NotebookProgress(display, show_after_s=0.5, redraw_s=0.0, show_from_bytes=100)
    show(Progress(0, 2, 10, 100, 0.1))  # too early: a short stream leaves no output
    assert shown == []
    show(Progress(1, 2, 50, 100, 0.6))
    show(Progress(2, 2, 100, 100, 0.9, done=True))
    assert [kind for kind, _ in shown] == ["display", "update"]
    first, last = shown[0][1], shown[1][1]
    assert first["text/plain"] == "checkpoint statistics: 1 of 2 arrays, 0.0 of 0.0 MiB (50%), 0 MB/s"
    assert "<progress" in first["text/html"] and "<progress" not in last["text/html"]
    assert last["text/plain"].startswith("checkpoint statistics: 2 arrays, ")
    quiet: list = []
    short = NotebookProgress(lambda b: quiet.append(b), show_after_s=5.0, show_from_bytes=0)
    short(Progress(2, 2, 100, 100, 0.9, done=True))
    small = NotebookProgress(lambda b: quiet.append(b), show_after_s=0.0, show_from_bytes=101)
    small(Progress(1, 2, 50, 100, 3.0))  # a slow but small checkpoint: nothing either
    assert quiet == []


def test_outside_a_notebook_nothing_is_shown(tmp_path, capsys):
    assert not in_notebook() and auto_progress(None) is None and auto_progress(False) is None
    with pytest.raises(TypeError, match="progress must be a callable"):
        auto_progress("yes")
    path = save(tmp_path / "ckpt", {"w": nnx.Param(jnp.ones((8, 8)))})
    checkpoint_rows(path)
    assert capsys.readouterr().out == ""


def test_in_an_ipython_kernel_the_line_goes_through_a_display_handle(monkeypatch):
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell, "kernel", object(), raising=False)  # what a notebook's shell has
    assert in_notebook() and isinstance(auto_progress(None), NotebookProgress)
    box = []  # a background thread (the viewer's checkpoint reader) shows nothing: its cell is gone
    reader = threading.Thread(target=lambda: box.append(auto_progress(None)))
    reader.start()
    reader.join()
    assert box == [None]
    show = NotebookProgress(show_after_s=0.0, redraw_s=0.0, show_from_bytes=0)  # IPython's own display and handle
    with capture_output() as out:
        show(Progress(1, 2, 50, 100, 0.6))
        show(Progress(2, 2, 100, 100, 0.9, done=True))
    texts = [o.data["text/plain"] for o in out.outputs]
    assert texts[0].startswith("checkpoint statistics: 1 of 2") and texts[-1].startswith(
        "checkpoint statistics: 2 arrays"
    )
    assert IPython.version_info[0] >= 7


def test_snapshot_of_a_path_in_a_notebook_ends_with_its_progress_line(tmp_path, monkeypatch):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    import nnx_lab
    from nnx_lab.core.checkpoint import NotebookProgress, auto_progress

    path = save(tmp_path / "ckpt", {"w": nnx.Param(jnp.ones((64, 32)))}, 1024)
    monkeypatch.setattr(InteractiveShell.instance(), "kernel", object(), raising=False)
    assert isinstance(auto_progress(None), NotebookProgress)  # in a kernel, progress=None is the notebook line
    # as if the checkpoint were big and slow: the same line, shown from the start
    with capture_output() as out:
        snap = nnx_lab.snapshot(path, progress=NotebookProgress(show_after_s=0.0, show_from_bytes=0))
    assert snap.rows[0].stats["mean"] == 1.0
    texts = [o.data["text/plain"] for o in out.outputs]
    assert texts[0].startswith("checkpoint statistics: 0 of 1 arrays,")
    assert texts[-1].startswith("checkpoint statistics: 1 arrays, 0.0 MiB read in ")


def test_snapshot_of_a_path_passes_progress_on_and_a_model_refuses_it(tmp_path):
    from nnx_lab.core.snapshot import snapshot

    path = save(tmp_path / "ckpt", {"w": nnx.Param(jnp.ones((64, 32))), "b": nnx.Param(jnp.zeros((32,)))}, 1024)
    reports = []
    snap = snapshot(path, progress=reports.append)
    assert reports and reports[-1].done and reports[-1].arrays_done == 2
    assert float(snap["w"].stats["mean"]) == 1.0
    with pytest.raises(TypeError, match="progress= is for a checkpoint directory"):
        snapshot(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), progress=reports.append)
