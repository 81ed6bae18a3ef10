"""compare()'s figures against float64 numpy: odd sizes, empty arrays, layers, NaN, Inf; how many
programs compare() compiles (one per device group; seen in jax's own compile log) and how often it
fetches from the device. Through public APIs only."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from test_compare import Net

import nnx_lab

#: what docs/guide/compare.md promises: "A program reads at most 1,024 arrays"
MAX_ARRAYS = 1024


@contextlib.contextmanager
def value_programs():
    """The arrays each program compare() compiles for its values reads, one entry per compile, from jax's
    own compile log (``jax.log_compiles``: "Compiling jit(_program_fn) with global shapes and types
    (...)"; its arguments are the arrays and the tolerance)."""
    sizes: list[int] = []

    class Compiles(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if message.startswith("Compiling jit(_program_fn) "):
                sizes.append(message.split(". Argument mapping")[0].count("ShapedArray(") - 1)

    handler, logger = Compiles(), logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield sizes
    finally:
        logger.removeHandler(handler)


def reference(a: np.ndarray, b: np.ndarray, tol: float) -> tuple[list, list]:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        d = a64 - b64
        differ = a.view(np.uint32) != b.view(np.uint32)
        changed = ~(np.abs(d) <= tol) & differ
    floats = [(d * d).sum(), (a64 * a64).sum(), (b64 * b64).sum(), (a64 * b64).sum(), np.abs(d).max(initial=0.0)]
    ints = [int(changed.sum()), int(differ.sum()), int(np.isnan(a).sum()), int(np.isnan(b).sum())]
    return floats, ints


def check(row, a: np.ndarray, b: np.ndarray, tol: float) -> None:
    """A compare() row's figures against float64 numpy (each one is made from the sums above)."""
    floats, (changed, differ, nan_a, nan_b) = reference(a, b, tol)
    d2, a2, b2, ab, max_abs = map(float, floats)
    assert row.size == a.size and row.identical == (differ == 0), row
    assert row.frac_changed == (changed / a.size if a.size else 0.0), row
    if nan_a or nan_b:
        assert row.status == "nan" and row.note == f"NaN: {nan_a} in a, {nan_b} in b", row
    rel = math.sqrt(d2) / math.sqrt(a2) if a2 > 0 else (0.0 if d2 == 0 else math.inf)
    cos = ab / math.sqrt(a2 * b2) if a2 > 0 and b2 > 0 else None
    for got, want in ((row.rel_change, rel), (row.max_abs, max_abs), (row.cosine, cos)):
        if want is None or math.isnan(want):
            assert got is want or math.isnan(got), row
        else:
            assert got == pytest.approx(want, rel=1e-5, abs=1e-6), row


class Many(nnx.Module):
    """Thousands of small Variables of three specs (attributes: Colab's flax 0.11 has no nnx.List)."""

    def __init__(self, values: dict[str, np.ndarray]):
        for name, v in values.items():
            setattr(self, name, nnx.Param(jnp.asarray(v)))


def test_every_pair_and_layer_matches_float64_numpy():
    rng = np.random.default_rng(0)
    a = {
        "odd": rng.standard_normal(5001).astype(np.float32),  # no run width divides it: one run
        "empty": np.zeros((3, 0), np.float32),
        "layers": rng.standard_normal((4, 3, 4096)).astype(np.float32),
        "nan": rng.standard_normal(8192).astype(np.float32),
        "inf": np.array([np.inf, 1.0, -2.0, 3.0] * 32, np.float32),
    }
    b = {k: v + np.float32(0.01) * (rng.standard_normal(v.shape) > 1) for k, v in a.items()}
    for v in b.values():  # differing bits within tol: equal, not changed
        v += np.float32(0.001) * (rng.standard_normal(v.shape) > 1)
    a["nan"][7] = np.nan
    b["inf"] = a["inf"].copy()  # inf - inf: a NaN difference although bit-identical
    cmp = nnx_lab.compare(Many(a), Many(b), tol=0.005, layers={"layers": 0})
    for k in ("odd", "empty", "nan", "inf"):
        check(cmp[k], a[k], b[k], 0.005)
    assert [r.path for r in cmp.rows if r.layer_of == "layers"] == [f"layers[layer {i}]" for i in range(4)]
    for i in range(4):
        check(cmp[f"layers[layer {i}]"], a["layers"][i], b["layers"][i], 0.005)
    # a NaN difference makes max |a-b| NaN whatever the CPU's vectorized max did with it
    assert math.isnan(cmp["nan"].max_abs) and math.isnan(cmp["inf"].max_abs)
    assert cmp["inf"].identical and cmp["inf"].status == "identical" and cmp["empty"].frac_changed == 0.0


def test_thousands_of_small_pairs_compile_few_bounded_programs_and_match_numpy():
    """One program over every pair took 49 s and 1.9 GB at 2,000 Variables (issue 35): programs read
    at most 1,024 arrays, pairs of one spec share a compiled program, and the values are right across
    the batch and program boundaries."""
    rng = np.random.default_rng(1)
    a = {f"v{i}": rng.standard_normal(4).astype(np.float32) for i in range(2000)}
    a.update({f"m{i}": rng.standard_normal((3, 5)).astype(np.float32) for i in range(900)})
    a.update({f"s{i}": rng.standard_normal((2, 3)).astype(np.float32) for i in range(130)})  # layers=
    for n in (7, 9, 11, 13, 17):  # five specs of 100: their rests (and the three above) need two programs
        a.update({f"r{n}_{i}": rng.standard_normal(n).astype(np.float32) for i in range(100)})
    b = {k: v.copy() for k, v in a.items()}
    for i in (0, 127, 128, 1919, 1920, 1999):  # the edges of stacked batches and of the padded rest
        b[f"v{i}"][i % 4] += np.float32(0.25 + i / 1e4)
    for i in (0, 383, 384, 895, 896, 899):
        b[f"m{i}"][1] *= np.float32(-2)
    b["s129"][1, 2] = np.nan
    b["s7"][0] += 1
    b["r17_99"][16] = np.float32(3)
    layers = {f"s{i}": 0 for i in range(130)}
    with value_programs() as sizes:
        cmp = nnx_lab.compare(Many(a), Many(b), layers=layers)
    # a full batch per spec (v, m, s), their rests and the five specs' packed in 2 programs of <= 1,024 arrays
    assert 1 <= len(sizes) <= 5, f"{sizes}: programs compiled for 8 specs"
    assert max(sizes) <= MAX_ARRAYS, f"a program over {max(sizes)} arrays"
    with value_programs() as again:
        nnx_lab.compare(Many(b), Many(a), layers=layers)  # other models of the same specs: nothing to compile
    assert again == []

    def check(row, x: np.ndarray, y: np.ndarray) -> None:
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        d = x64 - y64
        assert row.identical == bool((x.view(np.uint32) == y.view(np.uint32)).all()), row.path
        assert row.frac_changed == (d != 0).sum() / x.size, row.path
        assert row.rel_change == pytest.approx(np.linalg.norm(d) / np.linalg.norm(x64), rel=1e-5, abs=1e-7)
        assert row.max_abs == pytest.approx(np.abs(d).max(), rel=1e-6)
        cos = (x64 * y64).sum() / np.linalg.norm(x64) / np.linalg.norm(y64)
        assert row.cosine == pytest.approx(cos, rel=1e-5)

    for name in a:
        if name != "s129":
            check(cmp[name], a[name], b[name])
    for i in range(2):
        check(cmp[f"s7[layer {i}]"], a["s7"][i], b["s7"][i])
        check(cmp[f"s128[layer {i}]"], a["s128"][i], b["s128"][i])
    assert cmp["s129"].status == "nan" and cmp["s129[layer 0]"].status == "identical"
    assert cmp["s129[layer 1]"].status == "nan"
    assert cmp.counts["changed"] == 12 + 1 + 1 and cmp["s7[layer 0]"].status == "changed"  # counts: Variables


def test_one_program_for_all_pairs_of_a_device():
    a, b = Net(width=6), Net(width=6, seed=1)
    calls = []
    real = jax.device_get
    try:
        jax.device_get = lambda x: calls.append(1) or real(x)
        with value_programs() as sizes:
            nnx_lab.compare(a, b)
    finally:
        jax.device_get = real
    assert len(sizes) == 1, sizes
    # one host fetch of the few sums of every pair, one of the RNG counter's values (shown as a count)
    assert len(calls) == 2


# compare() across devices (8 forced host devices, in a subprocess: XLA_FLAGS must be set before jax
# starts): one program per device group, sharding mismatches, sharded values against numpy.
SCRIPT = r"""
import logging
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from flax import nnx
import nnx_lab

devices = jax.devices()
assert len(devices) == 8
mesh = Mesh(np.array(devices[:4]).reshape(2, 2), ("data", "model"))
x = jax.random.normal(jax.random.key(0), (64, 32))
y = x.at[0, 0].add(1.0)
a = {"w": nnx.Param(jax.device_put(x, NamedSharding(mesh, P("data", "model")))),
     "v": nnx.Param(jax.device_put(x, devices[5]))}
b = {"w": nnx.Param(jax.device_put(y, NamedSharding(mesh, P("model", None)))),
     "v": nnx.Param(jax.device_put(y, devices[6]))}
compiles = []  # jax's own compile log: one line per program compare() compiles for its values
class Compiles(logging.Handler):
    def emit(self, record):
        compiles.extend(record.getMessage().startswith("Compiling jit(_program_fn) ") * [1])
logging.getLogger("jax").addHandler(Compiles())
with jax.log_compiles(True):
    cmp = nnx_lab.compare(a, b)
groups = len(compiles)
w, v = cmp["w"], cmp["v"]
xn, yn = np.asarray(x), np.asarray(y)
rel = np.linalg.norm(yn - xn) / np.linalg.norm(xn)
assert abs(w.rel_change - rel) < 1e-5 * rel and abs(v.rel_change - rel) < 1e-5 * rel, (w, v, rel)
assert w.frac_changed == v.frac_changed == 1 / x.size
first, second = w.mismatch.split(" vs ")  # PartitionSpec's repr differs between jax versions
assert first.startswith("sharding ") and "('data', 'model')" in first and "'model', None" in second, w.mismatch
assert v.mismatch is None  # one device each: where they live is no mismatch
assert "1 sharding mismatch" in cmp.verdict
# a snapshot says a sharding as the live array's row does: no mismatch against the model itself
described = nnx_lab.compare(nnx_lab.snapshot(a, stats=False), a)
assert described["w"].mismatch is None and "sharding mismatch" not in described.verdict, described["w"]
print("groups", groups, cmp.verdict)
"""


def test_sharded_and_placed_arrays():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("groups 2 ")  # the mesh's 4 devices, and device 5 (b's v follows a's)
