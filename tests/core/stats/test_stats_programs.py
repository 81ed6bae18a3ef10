"""A model refreshed again is reduced by one compiled program: one launch, one place in the device's
queue, the same numbers as the per-array kernels; while it compiles, a viewer skips refreshes
rather than queue one kernel per array; anything odd falls back to the per-array kernels. A viewer's
program is the same in every session: its arrays' order never depends on memory addresses, or its
text (and its key in the disk cache) changes and a later session compiles it again.

Reaches inside ``nnx_lab.core.stats`` (why this file may): which program runs, in what order its
arrays go and when it compiles are the engine's own choices; only their numbers and timing show
outside, so the programs, plans and kernels are checked where they are made.
"""

import builtins
import logging
import re
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from layer_models import assert_layers_equal_numpy, randomize, vmapped
from live_helpers import Clock
from test_histogram import some_arrays
from test_stats import assert_close

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.snapshot import PendingSnapshot, snapshot
from nnx_lab.core.stats import (
    STAT_NAMES,
    PendingStats,
    StatsError,
    _executables,
    _histogram,
    _plan,
    _stats,
    compute_stats,
    histograms_dispatch,
    histograms_fetch,
)
from nnx_lab.core.stats import _dispatch as dispatch_lib
from nnx_lab.core.stats import _kernels as kernels
from nnx_lab.core.stats import _programs as programs
from nnx_lab.core.stats._kernels import float_masked, kernel_and_names
from nnx_lab.core.watcher import Watcher

RNG = np.random.default_rng(7)


class Stack(nnx.Module):
    """Small layers of one spec (stacked inside the program) beside arrays of their own."""

    def __init__(self, n: int, width: int):
        layers = [nnx.LayerNorm(width, rngs=nnx.Rngs(i)) for i in range(n)]
        self.layers = nnx.List(layers) if hasattr(nnx, "List") else layers  # flax 0.11: a plain list
        self.big = nnx.Param(jnp.asarray(RNG.normal(size=(300, 301)).astype(np.float32)))
        self.count = nnx.Variable(jnp.asarray(RNG.integers(-5, 9, (13,)), jnp.int32))
        self.flag = nnx.Variable(jnp.asarray([True, False, True]))
        for i, layer in enumerate(self.layers):
            compat.set_value(layer.scale, jnp.asarray(RNG.normal(size=(width,)).astype(np.float32)) * (i + 1))


def leaves_and_kernels(model):
    arrays = [x for x in jax.tree.leaves(nnx.state(model)) if x.size]
    return arrays, [kernel_and_names(x.dtype)[0] for x in arrays]


def compiled_program(model, timeout=120.0):
    """The program of ``model``'s structure once its background compile is done."""
    arrays, kernels = leaves_and_kernels(model)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = programs.program_for(kernels, arrays, background=True, eager=True)
        if isinstance(got, programs.Program):
            return got
        time.sleep(0.05)
    raise AssertionError("the program was not compiled")


@pytest.fixture
def calls(monkeypatch):
    """Counts per-array kernel calls and program launches."""
    counts = {"kernel": 0, "program": 0}
    real_call, real_launch = dispatch_lib.call, programs.Program.launch

    def call(kernel, x):
        counts["kernel"] += 1
        return real_call(kernel, x)

    def launch(self, arrays, *guesses):
        counts["program"] += 1
        return real_launch(self, arrays, *guesses)

    monkeypatch.setattr(dispatch_lib, "call", call)
    monkeypatch.setattr(programs.Program, "launch", launch)
    return counts


def test_a_viewer_refreshes_with_one_launch_and_the_numbers_of_the_per_array_kernels(calls):
    model = Stack(12, 37)
    alone = snapshot(model)  # per-array kernels (a structure seen once gets no program)
    assert calls == {"kernel": len(leaves_and_kernels(model)[0]), "program": 0}
    watcher = Watcher(model, max_rate=100.0)
    watcher.refresh(force=True)
    compiled_program(model)
    calls.update(kernel=0, program=0)
    watcher.refresh(force=True)
    assert calls == {"kernel": 0, "program": 1}
    for a, b in zip(alone.rows, watcher.snapshot.rows):
        assert a.path == b.path and a.status == b.status == "ok"
        assert b.stats.keys() == a.stats.keys()
        for name, v in a.stats.items():
            assert b.stats[name] == pytest.approx(v, rel=1e-5, abs=1e-6), (a.path, name)
    ints = watcher.snapshot["count"].stats
    assert (ints["min"], ints["max"]) == (
        int(compat.get_value(model.count).min()),
        int(compat.get_value(model.count).max()),
    )
    assert isinstance(ints["min"], int)
    assert watcher.snapshot["flag"].stats["mean"] == pytest.approx(2 / 3)


def test_nan_and_inf_in_a_stacked_array_are_counted_by_its_masked_kernel(calls):
    model = Stack(5, 11)
    Watcher(model).refresh(force=True)
    compiled_program(model)
    scale = np.asarray(compat.get_value(model.layers[3].scale)).copy()
    scale[2], scale[7] = np.nan, -np.inf
    compat.set_value(model.layers[3].scale, jnp.asarray(scale))
    calls.update(kernel=0, program=0)
    snap = PendingSnapshot(model, repeated=True).finish()
    assert calls == {"kernel": 1, "program": 1}  # the one array with NaN/Inf gets the masked kernel
    got = snap[("layers", 3, "scale")].stats
    finite = scale[np.isfinite(scale)]
    assert (got["nan_count"], got["inf_count"]) == (1, 1)
    assert got["mean"] == pytest.approx(finite.mean(), rel=1e-5)
    assert got["max"] == pytest.approx(finite.max())
    assert snap[("layers", 2, "scale")].stats["nan_count"] == 0


def test_a_structure_change_gets_its_own_program_and_never_a_wrong_one(calls):
    model = Stack(4, 9)
    Watcher(model).refresh(force=True)
    compiled_program(model)
    model.layers[1].scale = nnx.Param(jnp.ones((10,)))  # a new shape: a new structure
    calls.update(kernel=0, program=0)
    snap = PendingSnapshot(model, repeated=True).finish()
    assert calls["program"] == 0 and calls["kernel"] > 0
    assert snap[("layers", 1, "scale")].shape == (10,)
    assert snap[("layers", 1, "scale")].stats["mean"] == 1.0


def test_while_the_program_compiles_a_viewer_skips_refreshes_instead_of_queueing_kernels(monkeypatch, calls):
    release = threading.Event()
    real_init = programs.Program.__init__

    def slow_init(self, *a, **k):
        release.wait(60)
        real_init(self, *a, **k)

    monkeypatch.setattr(programs.Program, "__init__", slow_init)
    model = Stack(3, 5)
    clock = Clock()
    watcher = Watcher(model, max_rate=100.0, clock=clock)
    assert watcher.refresh(force=True)  # the first refresh: per-array kernels, shown at once
    first = calls["kernel"]
    clock.later()  # a refresh is due
    assert not watcher.tick() and watcher.state == "live"
    assert calls["kernel"] == first and not watcher.engine.in_flight  # skipped: nothing queued
    assert watcher.refresh(force=True)  # the end of a loop or cell does not skip
    release.set()
    compiled_program(model)
    calls.update(kernel=0, program=0)
    clock.later()
    watcher.tick()
    watcher.wait()
    assert calls == {"kernel": 0, "program": 1}


def test_a_program_that_fails_to_compile_leaves_the_per_array_kernels_in_charge(monkeypatch, calls):
    def broken(self, *a, **k):
        raise RuntimeError("no program today")

    monkeypatch.setattr(programs.Program, "__init__", broken)
    model = Stack(2, 6)
    clock = Clock()
    watcher = Watcher(model, max_rate=100.0, clock=clock)
    for _ in range(4):
        clock.later()  # every tick refreshes
        watcher.tick()
        watcher.wait()
        time.sleep(0.2)
    assert watcher.state == "live" and calls["program"] == 0 and watcher.refreshes == 4  # every tick tried it
    arrays, kernels = leaves_and_kernels(model)
    assert programs.program_for(kernels, arrays, background=True, eager=True) is None  # not retried


def test_a_program_that_fails_to_compile_is_said_once_at_info(monkeypatch, caplog):
    """Its cost is speed only, so the log is the one place it shows: at INFO the first time, then DEBUG."""

    class NoProgramToday(RuntimeError):  # its own cause: said once per process, whatever ran before
        pass

    def broken(self, *a, **k):
        raise NoProgramToday("no program today")

    monkeypatch.setattr(programs.Program, "__init__", broken)
    with caplog.at_level(logging.INFO, logger="nnx_lab"):
        for seed in range(2):  # two structures, two failed compiles
            model = Stack(2 + seed, 6)
            arrays, kernels = leaves_and_kernels(model)
            programs.program_for(kernels, arrays, background=False, eager=True)
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "NoProgramToday" in r.getMessage()]
    assert said == [
        (
            "INFO",
            "nnx_lab: a structure's statistics program failed to compile: per-array kernels instead "
            "(slower; said once): NoProgramToday: no program today",
        )
    ]


def test_an_array_donated_before_the_launch_is_said_deleted_and_the_others_are_described(calls):
    model = Stack(3, 8)
    Watcher(model).refresh(force=True)
    compiled_program(model)
    w = compat.get_value(model.big)
    jax.jit(lambda x: x + 1, donate_argnums=0)(w)  # model.big's buffer is gone
    if not w.is_deleted():
        pytest.skip("this backend does not donate")
    snap = PendingSnapshot(model, repeated=True).finish()
    assert snap["big"].status == "deleted"
    assert snap[("layers", 0, "scale")].status == "ok" and snap[("layers", 0, "scale")].stats is not None


def test_one_program_on_each_set_of_devices():
    devices = jax.devices()
    arrays = [jnp.ones((3,)), jnp.zeros((4,))]
    if len(devices) > 1:
        arrays.append(jax.device_put(jnp.ones((5,)), devices[1]))
    groups = programs.device_groups(arrays + [np.ones(2)])
    assert groups[0] == [0, 1]
    assert len(groups) == (2 if len(devices) > 1 else 1)


def test_one_off_snapshots_keep_no_structure_alive(monkeypatch):
    """A structure seen once is remembered by its hash only (a key holds every array's spec), and
    only so many of them."""
    monkeypatch.setattr(programs, "MAX_SEEN_ONCE", 3)
    monkeypatch.setattr(programs, "_seen_once", type(programs._seen_once)())
    before = set(programs._programs)  # (an earlier test's compile may finish meanwhile: same keys)
    for width in range(20, 26):
        snapshot(Stack(2, width))
    assert set(programs._programs) <= before  # nothing compiled, no key kept
    assert len(programs._seen_once) == 3 and all(isinstance(h, int) for h in programs._seen_once)


def test_a_structure_with_more_arrays_than_a_program_takes_keeps_the_per_array_kernels(monkeypatch, calls):
    monkeypatch.setattr(programs, "MAX_PROGRAM_ARRAYS", 5)
    model = Stack(4, 7)  # 11 arrays
    clock = Clock()
    watcher = Watcher(model, max_rate=100.0, clock=clock)
    for _ in range(3):
        clock.later()  # every tick refreshes
        watcher.tick()
        watcher.wait()
    arrays, kernels = leaves_and_kernels(model)
    assert programs.program_for(kernels, arrays, background=True, eager=True) is None
    assert calls["program"] == 0 and watcher.refreshes == 3 and watcher.state == "live"


# -- a program's arrays in the same order in every session


def chunk_dtypes(arrays):
    plan = _plan.LaunchPlan(arrays)
    [(chunk, _)] = plan.chunks
    return [str(arrays[plan.index[m]].dtype) for m in chunk]


def test_a_chunks_order_does_not_follow_the_kernels_addresses(monkeypatch):
    arrays = [jnp.arange(4, dtype=jnp.int32), jnp.ones((6, 5)), jnp.ones(5), jnp.arange(3, dtype=jnp.int32)]
    order = chunk_dtypes(arrays)
    assert order == ["float32", "float32", "int32", "int32"]  # the float kernel's arrays first, then the integer's
    # Addresses ordered the other way round (another process): the same order.
    monkeypatch.setattr(_plan, "id", lambda obj: -builtins.id(obj), raising=False)
    assert chunk_dtypes(arrays) == order


def test_kernel_ranks_name_the_kernel_not_its_address():
    from nnx_lab.core.stats._kernels import KERNELS
    from nnx_lab.core.stats._layered import layered

    ranks = [_plan.kernel_rank(k) for k in KERNELS]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(KERNELS)
    assert _plan.kernel_rank(layered(KERNELS[0], 1)) == _plan.kernel_rank(layered(KERNELS[0], 1)) != ranks[0]
    assert str(builtins.id(KERNELS[0])) not in _plan.kernel_rank(KERNELS[0])


def test_the_masked_kernel_is_compiled_only_for_arrays_with_nan_or_inf():
    shape = (29, 7)  # a spec no other test uses
    clean = jnp.asarray(RNG.normal(size=shape).astype(np.float32))

    def masked_compiles():  # through jax.jit, or loaded/compiled for the disk cache
        kernel = float_masked
        return kernel._cache_size() + sum(spec[0] == id(kernel) for spec in list(_executables._loaded._data))

    masked_before = masked_compiles()
    [got] = compute_stats([clean])
    assert_close(got, numpy_stats(np.asarray(clean)))
    assert masked_compiles() == masked_before  # finite: the fast kernel was exact
    dirty = np.asarray(clean).copy()
    dirty[3, 4], dirty[5, 6] = np.nan, -np.inf
    a, b = compute_stats([clean, jnp.asarray(dirty)])
    assert_close(a, numpy_stats(np.asarray(clean)))
    assert_close(b, numpy_stats(dirty))
    assert (b["nan_count"], b["inf_count"]) == (1, 1)
    assert masked_compiles() == masked_before + 1


@pytest.fixture
def kernel_threads(monkeypatch):
    """The name of the thread each statistics kernel was called on."""
    names = []
    real = dispatch_lib.call
    monkeypatch.setattr(dispatch_lib, "call", lambda k, x: names.append(threading.current_thread().name) or real(k, x))
    return names


def test_new_specs_compile_side_by_side_and_agree_with_one_by_one(kernel_threads, monkeypatch):
    threads = kernel_threads
    arrays = [jnp.asarray(RNG.normal(size=(31 + k, 5)).astype(np.float32)) for k in range(4)]
    arrays += [jnp.asarray(RNG.integers(0, 9, (37,)).astype(np.int32))]
    together = compute_stats(arrays)  # five specs never seen: dispatched on threads
    assert sum(name.startswith("nnx_lab-compile") for name in threads) == 5, threads
    monkeypatch.undo()
    for x, got in zip(arrays, together):
        [alone] = compute_stats([x])
        assert got == alone


def test_under_a_thread_local_default_device_everything_runs_on_the_calling_thread(kernel_threads):
    seen = kernel_threads
    arrays = [jnp.asarray(RNG.normal(size=(41 + k, 3)).astype(np.float32)) for k in range(3)]
    with jax.default_device(jax.devices()[0]):
        got = compute_stats(arrays)
    assert all(isinstance(g, dict) for g in got)
    assert set(seen) == {threading.current_thread().name}


def test_a_thread_publishing_while_another_reads_the_table_never_sees_numbers_missing(monkeypatch):
    """A viewer's publishing thread asks ready() while the kernel's thread reads the table: one of
    them fetches, the other waits for it (it once got rows with no statistics: 'None == 3.0')."""
    import time

    arrays = [jnp.arange(10.0) + k for k in range(3)]
    pending = PendingStats(arrays)
    for r in pending._waiting:
        jax.block_until_ready(jax.tree.leaves(r))
    real, fetching = _stats._fetch, threading.Event()

    def slow_fetch(results):
        fetching.set()
        time.sleep(0.5)
        return real(results)

    monkeypatch.setattr(_stats, "_fetch", slow_fetch)
    publisher = threading.Thread(target=pending.ready)
    publisher.start()
    assert fetching.wait(10)
    means = pending.table().matrix()[:, STAT_NAMES.index("mean")]  # while the other fetches
    publisher.join()
    assert np.allclose(means, [4.5, 5.5, 6.5])


def test_a_failing_kernel_is_its_rows_error_and_logged(caplog):
    """A per-array kernel that fails as jax fails (RuntimeError: a deleted or donated buffer, an XLA
    error) becomes that array's StatsError, logged; any other exception is a bug and is raised."""
    x = jnp.ones(3)

    def failing(_):
        raise RuntimeError("INVALID_ARGUMENT: buffer deleted or donated")

    with caplog.at_level(logging.DEBUG, logger="nnx_lab"):
        got = dispatch_lib.call(failing, x)
    assert isinstance(got, StatsError) and "buffer deleted" in str(got)
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records if r.name == "nnx_lab")

    def buggy(_):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        dispatch_lib.call(buggy, x)


# --------------------------------------------------------------------------- the one pass
# A viewer's program reads each float array once, from the previous refresh's shift and exponent
# (core/snapshot/_one_pass.py): exact whenever the host's check passes, and the exact kernel's numbers
# whenever it fails (a magnitude jump, a shift far from the new mean, NaN appearing).

ONE_PASS_RNG = np.random.default_rng(11)


class Model(nnx.Module):
    """One array alone in the program, four of one spec stacked, a bfloat16 one and an integer one."""

    def __init__(self):
        self.w = nnx.Param(jnp.asarray(ONE_PASS_RNG.normal(0, 1, (300, 301)).astype(np.float32)))
        for k in range(4):
            setattr(self, f"v{k}", nnx.Param(jnp.asarray(ONE_PASS_RNG.normal(k, 0.5, (37,)).astype(np.float32))))
        self.h = nnx.Param(jnp.asarray(ONE_PASS_RNG.normal(0, 2, (64, 33)), jnp.bfloat16))
        self.steps = nnx.Variable(jnp.asarray(ONE_PASS_RNG.integers(0, 99, (5,)), jnp.int32))


def numpy_stats(x) -> dict:
    x = np.asarray(x).astype(np.float64)
    f = x[np.isfinite(x)]
    return {
        "mean": f.mean(),
        "std": f.std(),
        "min": f.min(),
        "max": f.max(),
        "norm": np.sqrt((f**2).sum()),
        "abs_max": np.abs(f).max(),
        "nan_count": int(np.isnan(x).sum()),
        "inf_count": int(np.isinf(x).sum()),
        "zero_frac": float((x == 0).mean()),
    }


def assert_numpy(snap, name, value, rel=2e-5):
    got, want = snap[name].stats, numpy_stats(value)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=rel, abs=1e-6 * max(1.0, abs(v))), (name, k, got[k], v)


@pytest.fixture
def kernel_calls(monkeypatch):
    """The per-array kernels called (a one-pass refresh calls none)."""
    called = []
    real = dispatch_lib.call
    monkeypatch.setattr(dispatch_lib, "call", lambda k, x: called.append(k) or real(k, x))
    return called


def with_program(model):
    """``model`` refreshed once by a viewer (per-array exact kernels: the first guesses), its program compiled."""
    Watcher(model, max_rate=100.0).refresh(force=True)
    arrays = [x for x in jax.tree.leaves(nnx.state(model)) if x.size]
    ks = [kernels.kernel_and_names(x.dtype)[0] for x in arrays]
    deadline = time.monotonic() + 120
    while not isinstance(programs.program_for(ks, arrays, background=True, eager=True), programs.Program):
        assert time.monotonic() < deadline, "the program was not compiled"
        time.sleep(0.05)
    return model


def refresh(model):
    return PendingSnapshot(model, repeated=True).finish()


def set_value(variable, value):
    compat.set_value(variable, jnp.asarray(value, compat.get_value(variable).dtype))


def test_a_warm_refresh_runs_no_per_array_kernel_and_equals_numpy(kernel_calls):
    model = with_program(Model())
    set_value(model.w, np.asarray(compat.get_value(model.w)) * 1.01 + 0.003)  # a training step's change
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == []
    for name in ("w", "v0", "v3", "h"):
        assert_numpy(snap, name, compat.get_value(getattr(model, name)).astype(np.float32))
    assert snap["steps"].stats["max"] == int(np.asarray(compat.get_value(model.steps)).max())


@pytest.mark.parametrize("factor", [2.0**40, 2.0**-40])
def test_a_magnitude_jump_is_described_by_the_exact_kernel_then_guessed_again(kernel_calls, factor):
    model = with_program(Model())
    set_value(model.w, np.asarray(compat.get_value(model.w)) * factor)
    set_value(model.v2, np.asarray(compat.get_value(model.v2)) * factor)  # one of a stacked batch
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == [kernels.float_kernel] * 2  # those two only, exactly
    for name in ("w", "v2", "v1"):
        assert_numpy(snap, name, compat.get_value(getattr(model, name)))
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == []  # the exact kernel's numbers were the next guess
    assert_numpy(snap, "w", compat.get_value(model.w))


def test_a_shift_far_from_the_new_mean_is_not_trusted(kernel_calls):
    model = with_program(Model())
    w = np.asarray(compat.get_value(model.w)).astype(np.float64)
    offset = (w * 1e-2 + 1000.0).astype(np.float32)  # |mean - shift| is 1e5 standard deviations
    set_value(model.w, offset)
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == [kernels.float_kernel]  # the one pass would have lost the std to cancellation
    assert_numpy(snap, "w", offset)  # the std to 2e-5, as test_stats.py's offset_small_std


def test_nan_appearing_is_counted_by_the_masked_kernel(kernel_calls):
    model = with_program(Model())
    w = np.asarray(compat.get_value(model.w)).copy()
    w[3, 4], w[7, 8], w[9, 9] = np.nan, np.inf, np.nan
    set_value(model.w, w)
    kernel_calls.clear()
    snap = refresh(model)
    assert kernel_calls == [kernels.float_masked]
    assert_numpy(snap, "w", w)
    assert (snap["w"].stats["nan_count"], snap["w"].stats["inf_count"]) == (2, 1)


MAGNITUDES = {
    "float32": (np.float32, [4e-21, 1e-37, 1e30, 1e38]),
    "bfloat16": (jnp.bfloat16, [4e-21, 1e-37, 1e30, 1e38]),
    "float16": (np.float16, [2e-4, 1.0, 3e4]),
}


@pytest.mark.parametrize("dtype", MAGNITUDES)
def test_the_one_pass_is_exact_near_both_ends_of_each_float_range(kernel_calls, dtype):
    kind, scales = MAGNITUDES[dtype]

    class Two(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.ones((777,), kind))
            self.b = nnx.Param(jnp.ones((777,), kind))

    model = with_program(Two())
    base = ONE_PASS_RNG.choice([-1.0, 1.0], 777) * ONE_PASS_RNG.uniform(0.5, 2.0, 777)
    for scale in scales:
        plain = np.asarray(jnp.asarray(base * scale, kind))
        offset = np.asarray(jnp.asarray(scale * (1.5 + 1e-2 * base), kind))  # |mean| >> std
        set_value(model.a, plain)
        set_value(model.b, offset)
        refresh(model)  # the jump to this magnitude: the exact kernel, then the guess
        set_value(model.a, plain[::-1].copy())  # other values, the same statistics
        set_value(model.b, offset[::-1].copy())
        kernel_calls.clear()
        snap = refresh(model)
        assert kernel_calls == [], (dtype, scale)  # the one pass was trusted ...
        assert_numpy(snap, "a", plain)  # ... and exact
        assert snap["b"].stats["std"] == pytest.approx(offset.astype(np.float64).std(), rel=1e-3)
        assert snap["b"].stats["norm"] == pytest.approx(np.sqrt((offset.astype(np.float64) ** 2).sum()), rel=2e-5)


def test_one_reduction_reads_the_array():
    """The lowered kernel (what every backend compiles) reads the array in ONE multi-output reduce
    (min, max, Σy, Σy², zero count) and then reduces its row partials; XLA's CPU backend, with the
    program's options, compiles it to those two reductions and materializes no scaled copy."""
    x = jnp.ones((512, 2048))
    lowered = jax.jit(kernels.float_one_pass).lower(x, jnp.float32(0), jnp.int32(0))
    reduces = [line for line in lowered.as_text().splitlines() if "stablehlo.reduce" in line]
    over_data = [line for line in reduces if "tensor<512x2048xf32>" in line.split(" : ")[-1]]
    assert len(reduces) == 2 and len(over_data) == 1
    assert re.search(r"= stablehlo\.reduce", over_data[0]) and ":5 = " in over_data[0]  # five results
    compiled = lowered.compile(compiler_options=programs.COMPILER_OPTIONS[0]).as_text()
    assert len(re.findall(r"\breduce\(", compiled)) == 2
    entry = compiled[compiled.index("ENTRY") :]
    assert len(re.findall(r"= f32\[512,2048\]", entry)) == 1  # the parameter alone: no copy of the data


X64_SCRIPT = """
import json, jax, jax.numpy as jnp, numpy as np
from flax import nnx
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.watcher import Watcher
from nnx_lab.core.stats import _dispatch as dispatch_lib
called = []
real = dispatch_lib.call
dispatch_lib.call = lambda k, x: called.append(k) or real(k, x)
rng = np.random.default_rng(0)
class M(nnx.Module):
    def __init__(self):
        self.tiny = nnx.Param(jnp.asarray(rng.normal(size=(333,)) * 1e-300))
        self.huge = nnx.Param(jnp.asarray(rng.normal(size=(200, 7)) * 1e300))
m = M()
Watcher(m, max_rate=100.0).refresh(force=True)  # x64: the program compiles on this thread
called.clear()
snap = PendingSnapshot(m, repeated=True).finish()
out = [len(called)]
for name, scale in (("tiny", 1e-300), ("huge", 1e300)):
    f = np.asarray(getattr(m, name)[...]) / scale  # numpy's own sums underflow/overflow: scaled reference
    s = snap[name].stats
    out += [s["std"] / (f.std() * scale), s["norm"] / (np.sqrt((f ** 2).sum()) * scale), s["mean"] / (f.mean() * scale)]
print(json.dumps(out))
"""


def test_float64_with_x64_on_is_read_once_and_exact():
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", X64_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    calls, *ratios = json.loads(proc.stdout.strip().splitlines()[-1])
    assert calls == 0  # the program's one pass, trusted
    assert all(abs(r - 1) < 1e-12 for r in ratios[:2] + ratios[3:5]), ratios  # std and norm
    assert abs(ratios[2] - 1) < 1e-9 and abs(ratios[5] - 1) < 1e-9, ratios  # mean


SHARDED_SCRIPT = """
import json, time, jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from flax import nnx
from nnx_lab.core.snapshot import PendingSnapshot
from nnx_lab.core.watcher import Watcher
from nnx_lab.core.stats import _programs as programs
s = NamedSharding(jax.make_mesh((4,), ("d",)), P("d"))
class M(nnx.Module):
    def __init__(self):
        self.a = nnx.Param(jax.device_put(jnp.arange(64.0).reshape(16, 4), s))
        self.b = nnx.Param(jax.device_put(jnp.ones((8, 3)), s))
        self.c = nnx.Param(jnp.ones((5,)))
        self.d = nnx.Param(jnp.arange(7.0))
m = M()
Watcher(m, max_rate=100.0).refresh(force=True)
deadline = time.monotonic() + 120
while programs.compiling() and time.monotonic() < deadline:
    time.sleep(0.05)
kinds = sorted(type(v).__name__ if not isinstance(v, str) else v for v in programs._programs.values())
snap = PendingSnapshot(m, repeated=True).finish()
print(json.dumps([kinds, snap["a"].stats["mean"], snap["d"].stats["std"]]))
"""


def test_a_program_of_sharded_arrays_beside_one_of_single_device_arrays_compiles():
    """Sharded arrays are reduced shard by shard (core/stats/_shards.py): their shards, side by
    side over the 4 devices, make one program (exact kernels, no collective); the single-device
    arrays' program, beside it, reads them in one pass. Both compile and agree with numpy."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SHARDED_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    kinds, mean, std = json.loads(proc.stdout.strip().splitlines()[-1])
    assert kinds == ["Program", "Program"]
    assert mean == 31.5 and std == pytest.approx(np.arange(7.0).std(), rel=1e-6)


def test_a_scalar_or_filled_array_changing_every_step_needs_no_second_round(kernel_calls):
    """min == max says everything (mean = min, std = 0) whatever the guess: a float scalar (a learning
    rate) or a filled array changing at every step would otherwise fail the check at every refresh."""

    class Filled(nnx.Module):
        def __init__(self):
            self.lr = nnx.Param(jnp.asarray(0.1, jnp.float32))
            self.fill = nnx.Param(jnp.zeros((40,), jnp.float32))

    model = with_program(Filled())
    for value in (3.0, 199.0, -(2.0**-100), 1e4):  # (a jump whose sums overflow: the masked kernel)
        set_value(model.lr, np.float32(value / 7))
        set_value(model.fill, np.full((40,), value, np.float32))
        kernel_calls.clear()
        snap = refresh(model)
        assert kernel_calls == [], value
        assert_numpy(snap, "lr", np.float32(value / 7).reshape(1))
        assert_numpy(snap, "fill", np.full((40,), value, np.float32))
        assert snap["fill"].stats["std"] == 0.0
        assert snap["fill"].stats["mean"] == float(np.float32(value))  # exactly, however tiny
        assert snap["lr"].stats["mean"] == float(np.float32(value / 7))


# --------------------------------------------------------------------------- histogram kernels


def test_one_kernel_per_shape_and_bins_reused_and_bounded(monkeypatch):
    monkeypatch.setattr(_histogram, "_kernels", type(_histogram._kernels)())
    arrays = some_arrays()
    first = histograms_fetch(histograms_dispatch(arrays, 8))
    assert len(_histogram._kernels) == 3
    again = [x + 0 for x in arrays] + [jnp.zeros((7, 11))]  # new arrays, shapes seen before
    assert histograms_fetch(histograms_dispatch(again, 8))[:3] == first
    assert len(_histogram._kernels) == 3  # same shapes, dtypes, device and bins: compiled once each
    histograms_dispatch(arrays, 4)
    assert len(_histogram._kernels) == 6
    monkeypatch.setattr(_histogram, "MAX_KERNELS", 4)
    histograms_dispatch(arrays[:1], 2)
    assert len(_histogram._kernels) == 4  # the least recently used went


SHARDED = r"""
import json
import jax, jax.numpy as jnp, numpy as np
from nnx_lab.core.stats import _histogram
from nnx_lab.core.stats import histograms_dispatch, histograms_fetch, histograms_prepare

mesh = jax.make_mesh((2,), ("model",))
x = jax.device_put(jnp.linspace(-2.0, 2.0, 64 * 16).reshape(64, 16).at[3, 3].set(jnp.nan),
                   jax.NamedSharding(mesh, jax.P(None, "model")))
histograms_prepare([x], bins=4)  # compiled on the caller's thread here: launches nothing
compiled = len(_histogram._kernels)
[row] = histograms_fetch(histograms_dispatch([x], bins=4))
again = histograms_fetch(histograms_dispatch([x * 2], bins=4))  # same shape and sharding: reused
v = np.asarray(x).ravel()
v = v[np.isfinite(v)]
print(json.dumps({"compiled": compiled, "after": len(_histogram._kernels), "row": row,
                  "numpy": np.histogram(v, bins=4, range=(v.min(), v.max()))[0].tolist(), "again": again[0] is not None}))
"""


def test_an_array_sharded_over_devices_gets_a_kernel_compiled_beforehand_and_numpys_counts():
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["compiled"] == got["after"] == 1  # prepared once, reused by both dispatches
    assert got["row"][2:] == got["numpy"] and got["again"]


# --------------------------------------------------------------------------- stacked layers


def test_a_viewer_refreshes_layers_in_one_program_launch(monkeypatch):
    counts = {"kernel": 0, "program": 0}
    real_call, real_launch = dispatch_lib.call, programs.Program.launch
    monkeypatch.setattr(
        dispatch_lib, "call", lambda k, x: (counts.__setitem__("kernel", counts["kernel"] + 1), real_call(k, x))[1]
    )
    monkeypatch.setattr(
        programs.Program,
        "launch",
        lambda self, *a: (counts.__setitem__("program", counts["program"] + 1), real_launch(self, *a))[1],
    )
    model = randomize(vmapped(n=5, metadata=False))
    watcher = Watcher(model, max_rate=100.0, layers={"blocks": 0})
    deadline = time.monotonic() + 120
    while True:
        counts.update(kernel=0, program=0)
        watcher.refresh(force=True)
        if counts["program"] or time.monotonic() > deadline:
            break
        while programs.compiling():
            time.sleep(0.05)
    assert counts == {"kernel": 0, "program": 1}
    snap = watcher.snapshot
    for path in ("blocks.lin.kernel", "blocks.steps", "blocks.norm.scale"):
        assert_layers_equal_numpy(snap, path, np.asarray(compat.get_value(eval("model." + path))), 0)


# --------------------------------------------------------------------------- new series while compiling
# A loop's first gradients change the layout of a refresh (parameters + gradients + optimizer state):
# while the program for the new layout compiles, the viewer keeps refreshing with the programs it has
# (the parameters' statistics and the optimizer state), the gradients follow once it is ready.


def wait_for_compiles(timeout=120.0):
    deadline = time.monotonic() + timeout
    while programs.compiling():
        assert time.monotonic() < deadline, "a statistics program took over two minutes to compile"
        time.sleep(0.02)


def test_a_viewer_keeps_refreshing_while_the_program_for_new_series_compiles(monkeypatch):
    model = nnx.Sequential(nnx.Linear(3, 5, rngs=nnx.Rngs(0)), nnx.Linear(5, 2, rngs=nnx.Rngs(1)))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    viewer = nnx_lab.watch(model, optimizer=opt, max_rate=100.0, display=False)
    watcher = viewer.watcher
    # The engine's injectable clock, moved on before each tick (from monotonic time: the times it holds stay comparable)
    clock = watcher.engine.clock = Clock(time.monotonic())
    wait_for_compiles()  # the program of the parameters and optimizer state (the viewer's first refresh)

    release = threading.Event()
    compile_program = programs._compile

    def slow_compile(*args, **kwargs):  # every program compiled from now on takes until `release`
        release.wait(120)
        return compile_program(*args, **kwargs)

    monkeypatch.setattr(programs, "_compile", slow_compile)

    def step():
        grads = nnx.grad(lambda m: (m(jnp.ones((4, 3))) ** 2).mean())(model)
        opt.update(model, grads)
        clock.later()  # the throttle allows every tick
        viewer.tick(grads=grads)
        watcher.wait()  # (published: what a later tick of a real loop would show)
        return watcher.snapshot

    try:
        counts = [watcher.refreshes]
        first = step()  # a new layout: reduced by the per-array kernels once, its program compiles meanwhile
        counts.append(watcher.refreshes)
        assert first.series.steps["grad"] == watcher.ticks
        for _ in range(3):
            snap = step()
            counts.append(watcher.refreshes)
            assert programs.compiling()
            # parameters and optimizer state of this step; the gradients of the first, said stale
            assert [r.stats["norm"] for r in snap.rows] == pytest.approx(
                [np.sqrt((np.asarray(v, np.float64) ** 2).sum()) for v in snap_values(model)], rel=1e-5
            )
            assert snap.series.steps["mu"] == watcher.ticks and snap.series.opt_step == watcher.ticks
            assert snap.series.steps["grad"] == first.series.steps["grad"] and "grad" in snap.series.stale
            assert any("while the statistics program that adds them compiles" in p for p in snap.series.problems)
        assert counts == list(range(counts[0], counts[0] + 5))  # every tick published a refresh
    finally:
        release.set()
    wait_for_compiles()
    snap = step()  # the program is ready: the gradients are back, fresh
    assert snap.series.steps["grad"] == watcher.ticks and "grad" not in snap.series.stale
    assert not snap.series.problems


def snap_values(model):
    """The parameters' arrays in the viewer's row order (bias before kernel, layer by layer)."""
    return [var[...] for _, var in sorted(nnx.to_flat_state(nnx.state(model)), key=lambda kv: [str(k) for k in kv[0]])]
