"""What compare() shows for what is not a parameter (issue 35): module aggregates over floating-point
Variables only, an RNG counter as a count (0 → 80), a key as a key; arrays deleted while compare()
runs (a donating map=) as ``deleted`` rows."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import nnx_lab
from nnx_lab.core.compare import comparison_payload


def _model():
    return nnx.Sequential(
        nnx.Linear(4, 8, rngs=nnx.Rngs(0)),
        nnx.BatchNorm(8, rngs=nnx.Rngs(0)),
        nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1)),
    )


@pytest.fixture(scope="module")
def trained():
    model = _model()
    before = nnx.clone(model)
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x = jnp.ones((3, 4))

    @nnx.jit
    def step(model, opt):
        grads = nnx.grad(lambda m: (m(x) ** 2).mean())(model)
        opt.update(model, grads)

    for _ in range(80):
        step(model, opt)
    return before, model


def _floats(model) -> dict:
    out = {}
    for path, v in nnx.to_flat_state(nnx.state(model)):
        arr = v.get_value() if hasattr(v, "get_value") else v.value
        if jnp.issubdtype(arr.dtype, jnp.floating):
            out[path] = np.asarray(arr, np.float64)
    return out


def test_module_aggregates_are_over_floating_point_variables_only(trained):
    before, after = trained
    cmp = nnx_lab.compare(before, after)
    a, b = _floats(before), _floats(after)
    diff = math.sqrt(sum(((a[k] - b[k]) ** 2).sum() for k in a))
    norm = math.sqrt(sum((a[k] ** 2).sum() for k in a))
    modules = {m.path: m for m in cmp.modules}
    root = modules["(root)"]
    assert root.rel_change == pytest.approx(diff / norm, rel=1e-4)  # was 4.17e-8: the key's data in it
    assert root.max_abs == pytest.approx(max(np.abs(a[k] - b[k]).max() for k in a), rel=1e-5)  # not 80
    assert root.count == 8 and root.changed == 7 and root.size == sum(v.size for v in a.values())
    # the Dropout holds no floating-point Variable: counted (1 of 2 changed), no figures
    drop = modules["layers[2]"]
    assert (drop.count, drop.changed) == (2, 1)
    assert drop.rel_change is drop.max_abs is drop.cosine is drop.frac_changed is None
    payload = {m["path"]: m for m in comparison_payload(cmp)["modules"]}
    assert payload["layers[2]"]["max_abs"] is None and payload["layers[2]"]["changed"] == 1


def test_an_rng_counter_is_a_count_and_a_key_is_a_key(trained):
    before, after = trained
    cmp = nnx_lab.compare(before, after)
    count = cmp["layers[2].rngs.count"]
    assert count.status == "changed" and (count.count_a, count.count_b) == (0, 80)
    assert count.note == "count 0 \u2192 80"
    assert count.rel_change is count.max_abs is count.cosine is count.frac_changed is None  # no "inf", no 80
    key = cmp["layers[2].rngs.key"]
    assert key.status == "prng_key" and key.rel_change is key.max_abs is key.cosine is None
    text = str(cmp)
    line = next(s for s in text.splitlines() if s.startswith("layers[2].rngs.count"))
    assert "count 0 \u2192 80" in line and "inf" not in line
    rows = {r["path"]: r for r in comparison_payload(cmp)["rows"]}
    assert rows["layers[2].rngs.count"]["note"] == "count 0 \u2192 80"
    same = nnx_lab.compare(after, after)
    assert same["layers[2].rngs.count"].note == "count 80" and same["layers[2].rngs.count"].status == "identical"


def test_arrays_donated_by_map_while_compare_runs_are_deleted_rows():
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    kernel = model.kernel.get_value() if hasattr(model.kernel, "get_value") else model.kernel.value

    def donating(key: str) -> str:
        if key == "kernel":
            jax.jit(lambda x: x + 1, donate_argnums=0)(kernel)
            if not kernel.is_deleted():  # a backend that cannot donate (a warning, not a deletion)
                kernel.delete()
        return key

    cmp = nnx_lab.compare(model, model, map=donating)  # was RuntimeError: Array has been deleted
    assert cmp["kernel"].status == "deleted" and "deleted or donated" in cmp["kernel"].note
    assert cmp["bias"].status == "identical"
    assert "1 not compared" in cmp.verdict


def test_low_precision_floats_are_aggregated_and_integer_arrays_are_not():
    a = {"m": {"w": jnp.ones((4,), jnp.bfloat16), "ids": jnp.arange(4, dtype=jnp.int32)}}
    b = {"m": {"w": jnp.full((4,), 2.0, jnp.bfloat16), "ids": jnp.arange(4, dtype=jnp.int32) * 1000}}
    modules = {m.path: m for m in nnx_lab.compare(a, b).modules}
    assert modules["m"].rel_change == pytest.approx(1.0) and modules["m"].max_abs == 1.0  # w alone, not ids' 3000
    assert modules["m"].count == 2 and modules["m"].changed == 2
