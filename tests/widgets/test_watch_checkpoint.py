"""``watch("path/to/checkpoint")`` and ``%nnx_watch 'path'``: an Orbax checkpoint as the viewer's static table."""

from __future__ import annotations

import pathlib

import pytest
from flax import nnx
from IPython.core.error import UsageError

import nnx_lab
from nnx_lab.widgets.viewer_checkpoint import CheckpointViewer, checkpoint_path

ocp = pytest.importorskip("orbax.checkpoint", reason="orbax-checkpoint is the checkpoint extra")


def save(path: pathlib.Path, model) -> str:
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(path, nnx.state(model))
    checkpointer.wait_until_finished()
    return str(path)


@pytest.fixture
def ckpt(tmp_path):
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1)))
    return save(tmp_path / "ckpt", model), model


def test_watch_a_checkpoint_path_shows_its_rows_and_statistics(ckpt):
    path, model = ckpt
    viewer = nnx_lab.watch(path, display=False)
    assert isinstance(viewer, CheckpointViewer)
    snap = viewer.last_snapshot
    live = {r.path: r for r in nnx_lab.snapshot(model).rows}
    assert {r.path for r in snap.rows} == set(live)
    for row in snap.rows:
        assert row.status == "ok" and row.stats["norm"] == pytest.approx(live[row.path].stats["norm"], rel=1e-5)
    payload = viewer.snapshot
    assert payload["root_type"] == "Checkpoint" and len(payload["rows"]["parent"]) == 4
    assert payload["stats"]["norm"][0] is not None  # the trait holds the statistics, not only the rows
    assert viewer.status["state"] == "static" and path in viewer.status["message"]
    text, html = viewer._fallback()  # a saved notebook's copy: the static table
    assert text.startswith("CheckpointViewer · Checkpoint: 4 variables") and "kernel" in html
    # its arrays are files: the device strip says where they are, not the kernel's "cpu · cpu × 1"
    disk = snap.checkpoint["disk_bytes"]
    assert disk > 0 and payload["devices"] == {
        "platform": f"on disk ({nnx_lab.core.render.format_bytes(disk)})",
        "device_kind": "",
        "count": 0,
        "devices": [],
    }
    assert f"{nnx_lab.core.render.format_bytes(disk)} on disk" in text.splitlines()[0]  # the static copy's same bytes
    viewer.close()


def test_a_pathlib_path_and_stats_false(ckpt):
    path, _ = ckpt
    viewer = nnx_lab.watch(pathlib.Path(path), display=False, stats=False)
    assert {r.status for r in viewer.last_snapshot.rows} == {"abstract"}
    assert "rows from the metadata" in viewer.status["message"]
    viewer.close()


def test_refresh_reads_the_directory_again(tmp_path):
    path = save(tmp_path / "ckpt", nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
    viewer = nnx_lab.watch(path, display=False)
    first = viewer.last_snapshot["kernel"].stats["norm"]
    import shutil

    shutil.rmtree(path)
    save(tmp_path / "ckpt", nnx.Linear(2, 2, rngs=nnx.Rngs(5)))
    viewer.refresh()
    assert viewer.last_snapshot["kernel"].stats["norm"] != first
    shutil.rmtree(path)
    viewer.refresh()  # gone: the status says so and the last rows stay
    assert viewer.status["state"] == "error" and "cannot read" in viewer.status["message"]
    assert len(viewer.last_snapshot.rows) == 2
    viewer.close()


def test_a_nan_in_a_checkpoint_raises_the_live_viewers_nan_banner(tmp_path):
    import shutil

    import jax.numpy as jnp

    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1)))
    kernel = model.layers[1].kernel
    kernel[...] = kernel[...].at[0, 1].set(jnp.nan)
    path = save(tmp_path / "ckpt", model)
    viewer = nnx_lab.watch(path, display=False)
    live = nnx_lab.watch(model, display=False)  # the live viewer of the same arrays: the same banner
    assert live.alert and viewer.alert == live.alert
    assert viewer.alert["head"] + viewer.alert["where"] + viewer.alert["tail"] == (
        "first NaN at refresh 1 in layers[1].kernel; now in 1 variable"
    )
    live.close()
    shutil.rmtree(path)
    save(tmp_path / "ckpt", nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1))))
    viewer.refresh()  # rewritten clean: the first NaN is still named, now clean
    assert viewer.alert["where"] == "layers[1].kernel" and viewer.alert["tail"] == "; now clean"
    viewer._on_message(viewer, {"type": "clear_alert"}, [])  # the banner's "clear" button
    assert viewer.alert == {}
    viewer.refresh()
    assert viewer.alert == {}  # a clean read raises none
    viewer.close()


@pytest.mark.parametrize("make", ["missing", "empty_dir", "file"])
def test_a_path_that_is_no_checkpoint_is_a_one_line_error(tmp_path, make):
    target = tmp_path / "nothing"
    if make == "empty_dir":
        target.mkdir()
    elif make == "file":
        target.write_text("not a checkpoint")
    with pytest.raises(TypeError) as info:
        nnx_lab.watch(target, display=False)
    assert "\n" not in str(info.value) and str(target) in str(info.value)


def test_which_strings_are_paths(tmp_path, monkeypatch):
    (tmp_path / "ckpt").mkdir()
    monkeypatch.chdir(tmp_path)
    assert checkpoint_path("ckpt", {}) == "ckpt"  # a directory, no variable of that name: read
    assert checkpoint_path("ckpt", {"ckpt": object()}) is None  # a bound name: followed
    assert checkpoint_path("model", {}) is None  # a name, no directory: followed (a status says it is missing)
    assert checkpoint_path("runs/ckpt_1", None) == "runs/ckpt_1"  # no Python name: a path
    assert checkpoint_path(tmp_path, None) == str(tmp_path)
    assert checkpoint_path(nnx.Linear(1, 1, rngs=nnx.Rngs(0)), None) is None


def test_nnx_watch_magic_reads_a_checkpoint(ip, ckpt):
    path, _ = ckpt
    ip.user_ns["where"] = path
    ip.run_line_magic("nnx_watch", "where --as v")
    assert isinstance(ip.user_ns["v"], CheckpointViewer)
    ip.user_ns["v"].close()
    with pytest.raises(UsageError, match="no checkpoint at") as info:
        ip.run_line_magic("nnx_watch", f"{str(pathlib.Path(path).parent)!r}")
    assert "\n" not in str(info.value)


def test_a_big_checkpoint_shows_its_rows_first(ckpt, monkeypatch):
    from nnx_lab.widgets import viewer_checkpoint

    path, _ = ckpt
    monkeypatch.setattr(viewer_checkpoint, "background_unsupported", lambda: None)  # as in a kernel
    monkeypatch.setattr(viewer_checkpoint, "ROWS_FIRST_BYTES", 10)  # this one counts as big
    viewer = CheckpointViewer(path)
    assert viewer._reader is not None  # the statistics on their way from a thread
    assert {r.status for r in viewer.last_snapshot.rows} == {"ok"}  # waited for
    assert viewer.status["state"] == "static"
    viewer.close()
    monkeypatch.undo()
    small = CheckpointViewer(path)  # 4 arrays of a few bytes: read before it is shown
    assert small._reader is None and small.status["state"] == "static"
    small.close()


def test_the_stream_progress_goes_to_the_status_line(ckpt, monkeypatch):
    import nnx_lab.core.checkpoint as checkpoint
    from nnx_lab.core.checkpoint import Progress

    path, _ = ckpt
    given = []
    real = checkpoint.checkpoint_rows
    monkeypatch.setattr(
        checkpoint, "checkpoint_rows", lambda p, **kw: given.append(kw.get("progress")) or real(p, **kw)
    )
    viewer = CheckpointViewer(path)
    assert given[-1] == viewer._progress  # the viewer's own callback, never the notebook's progress line
    messages = []
    viewer.observe(lambda change: messages.append(change["new"]["message"]), names="status")
    viewer._progress_at = 0.0
    viewer._progress(Progress(1, 4, 10, 40, 0.5))
    assert messages[-1].endswith("reading the statistics: 1 of 4 arrays, 25%")
    viewer.close()


def test_a_prng_key_in_a_checkpoint_is_shown_as_a_key_as_the_live_viewer_shows_it(tmp_path):
    # Orbax saves a key array as its uint32 key data (and records the impl): shown as a key, no statistics
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1)))
    path = save(tmp_path / "ckpt", model)
    viewer = nnx_lab.watch(path, display=False)
    live = nnx_lab.watch(model, display=False)
    try:
        rows = {r.path_text: r for r in viewer.last_snapshot.rows}
        key, live_key = rows["layers[1].rngs.key"], live.last_snapshot["layers[1].rngs.key"]
        assert (key.status, key.shape, key.dtype, key.stats) == ("prng_key", (), live_key.dtype, None)
        assert key.dtype.startswith("key<")
        assert rows["layers[1].rngs.count"].status == "ok"  # the counter is a number, with its statistics
        payload = viewer.snapshot
        i = [r.path_text for r in viewer.last_snapshot.rows].index("layers[1].rngs.key")
        assert payload["stats"]["mean"][i] is None and payload["stats"]["norm"][i] is None  # was mean 1.2e+9
        status_of = payload["tables"]["status"][payload["rows"]["status"][i]]
        live_payload = live.snapshot
        j = [r.path_text for r in live.last_snapshot.rows].index("layers[1].rngs.key")
        assert status_of == live_payload["tables"]["status"][live_payload["rows"]["status"][j]] == "prng_key"
        text, _html = viewer._fallback()
        line = next(s for s in str(viewer.last_snapshot).splitlines() if s.startswith("layers[1].rngs.key"))
        assert "key<" in line and "prng_key" in line and "e+" not in line
        # compare() of two such checkpoints: the key is a key there too (bit for bit, no figures)
        cmp = nnx_lab.compare(path, path)
        assert cmp["layers[1].rngs.key"].status == "prng_key" and cmp["layers[1].rngs.key"].max_abs is None
    finally:
        viewer.close()
        live.close()
