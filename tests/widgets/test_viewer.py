"""The live State viewer, without a browser: refresh paths, throttle, failures, memory, hooks."""

import gc
import json
import re
import subprocess
import sys
import time
import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from IPython.core.error import UsageError
from viewer_wire import Wire

import nnx_lab

# Reaches inside nnx_lab._ipython (why this file may): which widgets the cell hooks track, and when they
# let go, is only seen in cell_hooks' registry (which an in-place reload of that module resets); a viewer's
# refresh dispatch is spied on in core.live (core.live._snapshots), and core.stats' programs are turned off
# (core.stats._stats.program_for) to check the per-array path's refresh.
from nnx_lab._ipython import cell_hooks as live
from nnx_lab.core import compat
from nnx_lab.core.watcher import Watcher


def small_model():
    return nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.BatchNorm(4, rngs=nnx.Rngs(0)))


def test_watch_publishes_a_snapshot_and_status():
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)
    snap = viewer.snapshot
    assert snap["refresh"] == 1 and snap["structure"] == 1
    assert len(snap["rows"]["key"]) == 6 and snap["root_type"] == "Sequential"
    assert viewer.status["state"] == "live" and viewer.status["refreshes"] == 1
    assert viewer.status["interval_s"] >= 0.5  # at most the default 2 refreshes/s (more under load: the budget)


def test_track_yields_everything_throttles_and_ends_current():
    model = small_model()
    viewer = nnx_lab.watch(model, max_rate=2.0, display=False)
    wire = Wire(viewer)
    seen = []
    start = time.monotonic()
    for step in viewer.track(range(200)):
        compat.set_value(model.layers[0].bias, jnp.full((4,), float(step)))
        seen.append(step)
    wall = time.monotonic() - start
    assert seen == list(range(200))
    # 200 quick steps: at most 2 throttled refreshes a second, plus the first and the final one.
    assert viewer.status["refreshes"] <= 2 + int(wall * 2) + 1
    bias = list(viewer.snapshot["rows"]["key"]).index("bias")
    assert wire.stats()["mean"][bias] == 199.0  # the end of the loop is shown


class FakeClock:
    """Stands in for the ``time`` module where refreshes are published: time moves only when told."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    perf_counter = monotonic

    def time(self):
        return self.now


@pytest.mark.parametrize(
    "refresh_cost, expected_interval",
    [
        (0.0001, 1 / 20),  # cheap refreshes: max_rate (20/s) is the limit
        (0.005, 0.005 / 0.02),  # dear refreshes: at most 2% of the time goes to refreshing
    ],
)
def test_tick_respects_rate_and_cost_budget(monkeypatch, refresh_cost, expected_interval):
    import nnx_lab.core.live._snapshots as watch_module  # where the Watcher's refreshes are dispatched

    model = small_model()  # held: the watcher alone would let it be collected
    clock = FakeClock()  # the Watcher's injected clock
    starts = []

    class CostlySnapshot(watch_module.PendingSnapshot):
        """Host time: refresh_cost to dispatch, on the fake clock (the device's time is not counted)."""

        def __init__(self, *args, **kwargs):
            starts.append(clock.now)
            super().__init__(*args, **kwargs)
            clock.now += refresh_cost
            self.host_s = refresh_cost
            self.inputs_ready = False  # no device time measured (tests/core/live/test_device_budget.py)

        def finish(self):
            snap = super().finish()
            self.host_s = refresh_cost
            return snap

    monkeypatch.setattr(watch_module, "PendingSnapshot", CostlySnapshot)
    # The throttle alone: no one-launch program, whose compile (real seconds, on a thread) would
    # skip refreshes of this fake-clock loop (tests/core/stats/test_stats_programs.py covers that).
    from nnx_lab.core.stats import _stats

    monkeypatch.setattr(_stats, "program_for", lambda *a, **k: None)
    # updates=False: the update ratio's launch (real CPU time, counted) would blur the fake costs.
    watcher = Watcher(model, max_rate=20.0, updates=False, clock=clock.monotonic)
    watcher.refresh(force=True)  # the first refresh compiles the stats kernels: not a cost estimate
    watcher.refresh(force=True)
    del starts[:]
    published = 0
    for _ in range(10_000):  # 10 s of 1 ms training steps
        clock.now += 0.001
        published += watcher.tick()
    spent = refresh_cost * len(starts)
    wall = clock.now - 1000.0
    assert watcher.interval == pytest.approx(expected_interval)
    gaps = np.diff(starts)
    assert len(starts) > 5 and gaps.min() >= expected_interval - 1e-9  # never sooner than allowed
    assert gaps.max() <= expected_interval + 0.001 + refresh_cost + 1e-9  # and not much later either
    assert spent <= watcher.budget * wall + refresh_cost  # refreshing took at most 2% of the loop
    assert published >= len(starts) - 1  # each dispatched refresh is published at a later tick


def test_a_failing_refresh_is_a_status_not_an_exception(monkeypatch):
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)
    import nnx_lab.core.live._snapshots as watch_module  # where the Watcher's refreshes are dispatched

    def broken(*args, **kwargs):
        raise RuntimeError("Array has been deleted with shape=float32[4]\nmore detail")

    monkeypatch.setattr(watch_module, "PendingSnapshot", broken)
    assert viewer.refresh() is False
    assert viewer.status["state"] == "error"
    assert viewer.status["message"] == "RuntimeError: Array has been deleted with shape=float32[4]"
    assert viewer.snapshot["refresh"] == 1  # the last good snapshot stays on screen
    monkeypatch.undo()
    assert viewer.refresh() and viewer.status["state"] == "live"


def test_donated_buffer_mid_step_shows_in_rows():
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)
    kernel = compat.get_value(model.layers[0].kernel)
    kernel.delete()
    viewer.refresh()
    statuses = viewer.snapshot["tables"]["status"]
    row = list(viewer.snapshot["rows"]["key"]).index("kernel")
    assert statuses[viewer.snapshot["rows"]["status"][row]] == "deleted"
    assert viewer.status["state"] == "live"


def test_tick_inside_jit_does_not_raise():
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)

    @nnx.jit
    def step(m):
        viewer.tick()
        return m(jnp.ones((2, 3)))

    step(model)
    assert viewer.status["state"] in ("live", "error")


def test_viewer_holds_the_model_weakly_and_says_it_is_gone():
    model = small_model()
    kernel_ids = {id(x) for x in jax.tree.leaves(nnx.state(model))}
    viewer = nnx_lab.watch(model, display=False)
    for _ in viewer.track(range(3)):
        pass
    del model
    gc.collect()
    assert not kernel_ids & {id(x) for x in jax.live_arrays()}, "the viewer kept device arrays alive"
    assert viewer.status["state"] == "gone"
    assert "garbage-collected" in viewer.status["message"]
    assert viewer.refresh() is False and viewer.snapshot["refresh"] >= 1


def test_ten_thousand_refreshes_do_not_grow_memory():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    viewer = nnx_lab.watch(model, display=False)
    for _ in range(300):
        viewer.refresh()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(10_000):
        viewer.refresh()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert viewer.status["refreshes"] == 10_301
    assert grown < 512 * 1024, f"memory grew by {grown} bytes over 10 000 refreshes"


def test_history_message_carries_float32_rows():
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)
    for _ in range(4):
        viewer.refresh()
    sent = []
    viewer.send = lambda msg, buffers=None: sent.append((msg, buffers))
    viewer._on_message(viewer, {"type": "history", "stat": "mean"}, [])
    msg, [buffer] = sent[0]
    assert msg == {"type": "history", "stat": "mean", "structure": 1, "rows": 6, "length": 5, "refresh": 5}
    values = np.frombuffer(buffer, np.float32).reshape(6, 5)
    assert np.array_equal(values, viewer.watcher.history.series("mean"), equal_nan=True)


def test_saved_notebook_fallback_is_stable_text_and_escaped_html():
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)
    data, _ = viewer._repr_mimebundle_()
    dev = viewer.last_snapshot.device_summary
    assert data["text/plain"] == (
        f"StateViewer · Sequential: 6 variables, 32 elements, 128 B on {dev['count']}× {dev['device_kind']}"
    )
    assert not re.search(r"0x[0-9a-f]+|\d\d:\d\d", data["text/plain"])
    assert 'class="nnx-lab-snapshot"' in data["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in data


def test_background_thread_refreshes_while_main_thread_works():
    model = small_model()
    watcher = Watcher(model, max_rate=50.0)
    watcher.refresh(force=True)
    watcher.start_background()
    try:
        deadline = time.monotonic() + 30  # ends at 5 refreshes; a loaded machine makes each dearer, so slower
        while watcher.refreshes < 5 and time.monotonic() < deadline:
            compat.set_value(model.layers[0].bias, compat.get_value(model.layers[0].bias) + 1)
            time.sleep(0.01)
    finally:
        watcher.stop_background()
    assert watcher.refreshes >= 5


def hooks(shell):
    return [
        fn
        for event in ("pre_run_cell", "post_run_cell")
        for fn in shell.events.callbacks[event]
        if live._is_ours(fn, event)
    ]


def test_one_hook_per_event_through_reload_and_none_after_unload(ip):
    for widget in live.widgets(object):  # earlier tests' widgets would keep the hooks (below)
        widget.close()
        live.untrack_widget(widget)
    assert len(hooks(ip)) == 2
    ip.run_line_magic("reload_ext", "nnx_lab")
    ip.run_line_magic("reload_ext", "nnx_lab")
    assert len(hooks(ip)) == 2
    ip.run_line_magic("unload_ext", "nnx_lab")
    assert hooks(ip) == []
    ip.run_line_magic("load_ext", "nnx_lab")


def test_unload_ext_leaves_viewers_on_screen_refreshing(ip):
    ip.user_ns.update(model=small_model(), nnx=nnx)
    ip.run_line_magic("nnx_watch", "model --as viewer")
    viewer = ip.user_ns["viewer"]
    ip.run_line_magic("unload_ext", "nnx_lab")
    try:
        assert len(hooks(ip)) == 2
        viewer.last_snapshot  # displayed: its first statistics come from a thread
        before = viewer._watcher.refreshes
        ip.run_cell("model.layers[0].bias.value = model.layers[0].bias.value + 1")
        viewer.last_snapshot  # the cell's refresh is published from a thread when its numbers arrive
        assert viewer._watcher.refreshes == before + 1 and viewer.status["state"] == "live"
        assert viewer.snapshot["stats"] is not None
        for _ in range(2):
            ip.run_line_magic("load_ext", "nnx_lab")
            assert len(hooks(ip)) == 2
    finally:
        viewer.close()
        for name in ("viewer", "model"):
            ip.user_ns.pop(name, None)


def test_background_unavailable_note_survives_refreshes(monkeypatch):
    import nnx_lab.widgets.viewer as viewer_module

    monkeypatch.setattr(viewer_module, "background_unsupported", lambda: "not running in an IPython kernel")
    model = small_model()
    viewer = nnx_lab.watch(model, background=True, display=False)
    for _ in range(3):
        viewer.refresh()
        assert "background refresh unavailable (not running in an IPython kernel)" in viewer.status["message"]
    assert viewer.status["state"] == "live"


def test_cells_are_numbered_while_they_run(ip):
    assert live.current_cell() is None  # no cell runs: a test calling code directly
    ip.run_cell("from nnx_lab._ipython import cell_hooks as _live; _first = _live.current_cell()")
    ip.run_cell("_second = _live.current_cell()")
    first, second = ip.user_ns["_first"], ip.user_ns["_second"]
    assert isinstance(first, int) and second == first + 1
    assert live.current_cell() is None


def test_cells_refresh_viewers_and_nnx_watch_binds(ip):
    ip.user_ns["model"] = small_model()
    ip.run_line_magic("nnx_watch", "model --as viewer")
    viewer = ip.user_ns["viewer"]
    wire = Wire(viewer)
    viewer.last_snapshot  # displayed: its first statistics come from a thread
    before = viewer.status["refreshes"]
    ip.run_cell(
        "from nnx_lab.core import compat\n"
        "compat.set_value(model.layers[0].bias, compat.get_value(model.layers[0].bias) + 3)"
    )
    viewer.last_snapshot  # the cell's refresh is published from a thread when its numbers arrive
    assert viewer.status["refreshes"] == before + 1
    bias = list(viewer.snapshot["rows"]["key"]).index("bias")
    assert wire.stats()["mean"][bias] == 3.0


@pytest.mark.parametrize(
    "line, message",
    [
        ("missing", "name 'missing' is not defined"),
        ("42", "expected an nnx.Module"),
        ("model --rate 0", "--rate (refreshes per second) must be a number in (0, 100]"),
        ("model --as 1x", "is not a valid Python name"),
    ],
)
def test_nnx_watch_bad_input(ip, line, message):
    ip.user_ns["model"] = small_model()
    with pytest.raises(UsageError, match=re.escape(message)):
        ip.run_line_magic("nnx_watch", line)


def test_closed_viewer_no_longer_refreshes_after_cells(ip):
    ip.user_ns["model"] = small_model()
    ip.run_line_magic("nnx_watch", "model --as viewer")
    viewer = ip.user_ns["viewer"]
    viewer.close()
    before = viewer.watcher.refreshes
    ip.run_cell("x = 1")
    assert viewer.watcher.refreshes == before
    assert viewer not in live._widgets


def test_rows_travel_once_then_each_refresh_sends_only_its_statistics():
    model = small_model()
    viewer = nnx_lab.watch(model, display=False)
    wire = Wire(viewer)
    first = viewer.snapshot
    bias = list(first["rows"]["key"]).index("bias")
    for step in range(3):
        compat.set_value(model.layers[0].bias, jnp.full((4,), float(step + 1)))
        viewer.refresh()
        assert viewer.snapshot is first  # the rows did not travel again
        content, buffers = wire.stats_messages()[-1]
        assert content["refresh"] == viewer.status["refreshes"] and content["rows"] == 6
        assert len(buffers[0]) == 6 * len(content["names"]) * 4  # float32: 36 bytes per Variable
        assert wire.stats()["mean"][bias] == step + 1
    viewer._on_message(viewer, {"type": "stats"}, [])  # a view that renders asks for the latest numbers
    assert wire.stats_messages()[-1][0]["refresh"] == viewer.status["refreshes"]
    model.layers[0].extra = nnx.Param(jnp.ones(2))  # new rows: the snapshot trait again, with numbers
    viewer.refresh()
    assert viewer.snapshot is not first and viewer.snapshot["structure"] == first["structure"] + 1
    assert len(viewer.snapshot["rows"]["key"]) == 7 and viewer.snapshot["stats"]["mean"][bias] == 3.0


def test_numbers_float32_cannot_carry_travel_exactly():
    snap = nnx_lab.snapshot({"w": jnp.ones(3)})
    buffer, exact = snap.stats_buffer()
    assert exact == {} and len(buffer) == 9 * 4
    m = snap.stat_matrix.copy()
    m[0, 0], m[0, 6] = 1e300, 2**30 + 1  # beyond float32's range; a count float32 would round
    snap.__dict__["stat_matrix"] = m
    _, exact = snap.stats_buffer()
    assert exact[0][0] == 1e300 and exact[0][6] == 2**30 + 1


def test_where_threads_may_publish_the_rows_show_before_the_statistics(monkeypatch):
    import nnx_lab.widgets.viewer as viewer_module

    monkeypatch.setattr(viewer_module, "background_unsupported", lambda: None)
    model = small_model()
    viewer = viewer_module.StateViewer(model, rows_first=True)  # what watch() does when it displays
    assert len(viewer.snapshot["rows"]["key"]) == 6  # the rows, before any kernel has run or compiled
    deadline = time.monotonic() + 120
    while viewer.status["refreshes"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert viewer.status["state"] == "live" and viewer._sent_refresh == 1
    assert viewer.last_snapshot.rows[1].stats["norm"] > 0


def test_refresh_now_is_answered_so_the_browser_can_tell_a_kernel_that_is_gone():
    """The browser says "no answer from the kernel" when a "refresh now" gets no ack in time (a
    restarted kernel drops the message): a living kernel must answer it, with the request's id."""
    viewer = nnx_lab.watch(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), display=False)
    sent = []
    viewer.send = lambda msg, buffers=None: sent.append(msg)
    viewer._on_message(viewer, {"type": "refresh", "id": "refresh-1"}, [])
    assert {"type": "ack", "id": "refresh-1", "state": "done"} in sent
    viewer.close()


# Issue 35 §6: `%reload_ext nnx_lab` while a viewer is on screen: the viewer keeps refreshing after
# cells, also when the package was imported again first (an upgrade in a running kernel) or the cell
# hooks' module was reloaded in place (autoreload), and a viewer closed afterwards stops. Each case runs
# in a fresh interpreter (a re-imported package would leave two copies of nnx_lab's classes in this one).
RELOAD_SCRIPT = r"""
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
        [sys.executable, "-c", RELOAD_SCRIPT.replace("__HOW__", how)], capture_output=True, text=True, timeout=300
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


def test_a_gradient_norm_beyond_float32_travels_exact_beside_the_series_buffer_without_a_warning():
    # Every element finite (1e38) but the norm 8e38 is beyond float32's range: the buffer holds +inf,
    # the series meta the exact value (the browser showed "inf" in the ||grad|| column before).
    import math
    import warnings

    import optax

    from nnx_lab.core.stats import STAT_NAMES

    class One(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones((64,), jnp.float32))

    model = One()
    optimizer = nnx.Optimizer(model, optax.sgd(1e-3), wrt=nnx.Param)
    viewer = nnx_lab.watch(model, optimizer=optimizer, display=False)
    viewer.log(grads=nnx.State({"w": nnx.Param(jnp.full((64,), 1e38, jnp.float32))}))
    sent = []
    viewer.send = lambda msg, buffers=None: sent.append((msg, buffers))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # before: overflow encountered in cast
        viewer.refresh()
        viewer.send_stats()
    msg, buffers = sent[-1]
    series = msg["series"]
    k, j = series["names"].index("grad"), STAT_NAMES.index("norm")
    assert (
        np.frombuffer(buffers[1], np.float32).reshape(len(series["names"]), len(STAT_NAMES) + 1, 1)[k, j, 0] == np.inf
    )
    assert [k, j, 0, 8e38] in series["exact"]
    assert len(series["exact"]) == 1  # the ratio, 8e38 / 8, fits
    # the trait's copy (sent when the rows change; emptied here to have it sent again) is JSON: None in
    # the values, the exact number in meta
    viewer.snapshot = {}
    viewer.refresh()
    trait = viewer.snapshot["series"]
    assert all(v is None or math.isfinite(v) for v in trait["values"]) and [k, j, 0, 8e38] in trait["exact"]
    json.dumps(viewer.snapshot, allow_nan=False)  # as jupyter_client packs a message
