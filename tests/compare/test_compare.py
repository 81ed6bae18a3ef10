"""compare(a, b): structure, values against numpy, statuses for odd inputs, never changing a model."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab import compare


class Net(nnx.Module):
    def __init__(self, width: int = 4, seed: int = 0):
        rngs = nnx.Rngs(seed)
        self.lin = nnx.Linear(3, width, rngs=rngs)
        self.bn = nnx.BatchNorm(width, rngs=rngs)
        self.out = nnx.Linear(width, 2, rngs=rngs)
        self.rng = nnx.Rngs(1)


def test_a_model_against_itself_and_its_state_is_identical_and_unchanged():
    model = Net()
    before = frozen(model)
    for other in (model, nnx.state(model), nnx.split(model), Net()):
        cmp = compare(model, other)
        assert cmp.identical and cmp.loadable, cmp.verdict
        assert cmp.verdict.startswith(
            "b loads into a: 0 missing, 0 unexpected, 0 shape mismatches; values: 9 identical, 0 changed, 1 PRNG key (identical)"
        )
    assert_unchanged(model, before)


def test_the_verdict_says_whether_the_prng_keys_changed():
    a, b = Net(), Net()
    b.rng = nnx.Rngs(2)
    assert cmp_verdict_tail(compare(a, b)) == "9 identical, 0 changed, 1 PRNG key (changed)"
    b.extra, a.extra = nnx.Rngs(3), nnx.Rngs(3)
    assert cmp_verdict_tail(compare(a, b)) == "10 identical, 0 changed, 2 PRNG keys (1 changed)"


def cmp_verdict_tail(cmp) -> str:
    return cmp.verdict.split("values: ")[1]


def test_values_against_numpy():
    a, b = Net(), Net()
    k = np.asarray(a.lin.kernel[...])
    changed = k.copy()
    changed[0, :2] += np.float32(0.5)
    b.lin.kernel[...] = jnp.asarray(changed)
    cmp = compare(a, b)
    row = cmp["lin.kernel"]
    assert row.status == "changed" and row.identical is False
    np.testing.assert_allclose(row.rel_change, np.linalg.norm(changed - k) / np.linalg.norm(k), rtol=1e-5)
    np.testing.assert_allclose(row.max_abs, 0.5, rtol=1e-6)
    cos = (k * changed).sum() / np.linalg.norm(k) / np.linalg.norm(changed)
    np.testing.assert_allclose(row.cosine, cos, rtol=1e-5)
    assert row.frac_changed == 2 / k.size
    assert cmp.rows[0].path == "lin.kernel"  # sorted by change
    assert cmp.changed() == [row]
    mods = {m.path: m for m in cmp.modules}
    assert mods["lin"].changed == 1 and mods["out"].identical and mods["(root)"].count == 10
    np.testing.assert_allclose(mods["lin"].max_abs, 0.5, rtol=1e-6)
    # within tol: equal, not identical
    loose = compare(a, b, tol=0.6)["lin.kernel"]
    assert loose.status == "equal" and loose.frac_changed == 0 and loose.identical is False


def test_structure_mismatches_and_verdict():
    a, b = Net(width=4), Net(width=5)
    del b.out
    b.extra = nnx.Param(jnp.ones(2))
    b.bn.mean = nnx.Param(b.bn.mean[...].astype(jnp.bfloat16))
    cmp = compare(a, b)
    status = {r.path: r.status for r in cmp.rows}
    assert status["out.kernel"] == status["out.bias"] == "missing"
    assert status["extra"] == "unexpected"
    assert status["lin.kernel"] == "shape" and "shape (3, 4) in a, (3, 5) in b" in cmp["lin.kernel"].note
    assert cmp.verdict.startswith("b loads into a: 2 missing, 1 unexpected, 6 shape mismatches")
    assert not cmp.loadable
    same = Net()
    same.bn.mean = nnx.Param(same.bn.mean[...].astype(jnp.bfloat16))
    row = compare(Net(), same)["bn.mean"]
    assert row.mismatch == "dtype float32 vs bfloat16; type BatchStat vs Param" and row.status == "equal"
    assert "1 dtype mismatch, 1 type mismatch" in compare(Net(), same).verdict


def test_tied_weights_on_one_side_only():
    class Tied(nnx.Module):
        def __init__(self, tie: bool):
            self.enc = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            self.dec = self.enc if tie else nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    cmp = compare(Tied(True), Tied(False))
    # flax names a shared Variable by its first path in key order (dec); enc is its alias
    assert {r.path: r.status for r in cmp.rows}["enc.kernel"] == "tied"
    assert "tied to dec.kernel in a only" in cmp["enc.kernel"].note
    assert "2 tied weights on one side only" in cmp.verdict
    assert compare(Tied(True), nnx.state(Tied(True))).identical  # nnx.state keeps a shared Variable once


def test_map_renames_linen_paths():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    linen = {"params": {"Dense_0": {"kernel": model.kernel[...], "bias": model.bias[...]}}}
    plain = compare(model, linen)
    assert plain.counts == {"missing": 2, "unexpected": 2}
    for rename in ({"params/Dense_0": ""}, {"params.Dense_0": ""}, lambda p: p.split("/")[-1]):
        cmp = compare(model, linen, map=rename)
        assert cmp.identical, cmp.verdict
        assert cmp["kernel"].path_b == "params.Dense_0.kernel"
    dropped = compare(model, linen, map=lambda p: None if p.endswith("bias") else p.split("/")[-1])
    assert dropped.counts == {"identical": 1, "missing": 1, "unexpected": 1}
    with pytest.raises(TypeError, match="map= renames str to str"):
        compare(model, linen, map={"params": 3})
    with pytest.raises(TypeError, match=r"map\('params/Dense_0/bias'\) raised ZeroDivisionError"):
        compare(model, linen, map=lambda p: 1 / 0)


def test_layers_rows():
    class Stack(nnx.Module):
        def __init__(self, bump: bool):
            w = jnp.arange(24.0).reshape(3, 2, 4)
            self.w = nnx.Param(w.at[1].add(1.0) if bump else w)

    cmp = compare(Stack(False), Stack(True), layers={"w": 0})
    rows = [(r.path, r.status, r.shape_a) for r in cmp.rows]
    assert rows == [
        ("w", "changed", (3, 2, 4)),
        ("w[layer 0]", "identical", (2, 4)),
        ("w[layer 1]", "changed", (2, 4)),
        ("w[layer 2]", "identical", (2, 4)),
    ]
    assert cmp["w[layer 1]"].frac_changed == 1.0 and cmp["w"].frac_changed == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="no Variable under 'blocks'"):
        compare(Stack(False), Stack(True), layers={"blocks": 0})
    with pytest.raises(ValueError, match="no axis 5"):
        compare(Stack(False), Stack(True), layers={"w": 5})


def test_odd_values_get_statuses():
    a, b = Net(), Net()
    b.bn.mean[...] = b.bn.mean[...].at[0].set(jnp.nan)
    b.rng.default.key[...] = jax.random.key(7)
    cmp = compare(a, b)
    assert cmp["bn.mean"].status == "nan" and cmp["bn.mean"].note == "NaN: 0 in a, 1 in b"
    key = cmp["rng.default.key"]
    assert key.status == "prng_key" and key.identical is False and key.rel_change is None
    abstract = compare(nnx.eval_shape(lambda: Net()), a)
    assert abstract.counts == {"abstract": 10}
    seen = []

    @jax.jit
    def inside(x):
        seen.append(compare({"w": x}, {"w": jnp.ones(2)})["w"].status)
        with pytest.raises(TypeError, match="jax tracer"):
            compare(x, {"w": x})
        return x

    inside(jnp.ones(2))
    assert seen == ["tracer"]


def _optimizer(model):
    optax = pytest.importorskip("optax")
    return nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


def test_two_optimizers_compare_like_models_and_stay_unchanged():
    """An nnx.Optimizer is an nnx.Pytree (flax 0.11 and 0.12), not a Module: its state compares all the same."""
    model_a, model_b = Net(), Net()
    opt_a, opt_b = _optimizer(model_a), _optimizer(model_b)
    assert compare(opt_a, opt_b).identical
    grads = nnx.grad(lambda m: (m.lin(jnp.ones((2, 3))) ** 2).sum())(model_b)
    opt_b.update(model_b, grads)
    before_a, before_b = frozen(opt_a), frozen(opt_b)
    cmp = compare(opt_a, opt_b)
    assert cmp.verdict.startswith("b loads into a: 0 missing, 0 unexpected, 0 shape mismatches")
    changed = {r.path for r in cmp.changed()}
    assert "step" in changed and "opt_state[0].mu.lin.kernel" in changed
    mu = np.asarray(opt_b.opt_state[0].mu["lin"]["kernel"][...])  # from zeros: the whole change
    np.testing.assert_allclose(cmp["opt_state[0].mu.lin.kernel"].max_abs, np.abs(mu).max(), rtol=1e-6)
    assert cmp["opt_state[0].mu.out.kernel"].status == "identical"  # no gradient reached out
    assert compare(opt_b, nnx.state(opt_b)).identical  # against its saved state
    assert_unchanged(opt_a, before_a)
    assert_unchanged(opt_b, before_b)


@pytest.mark.parametrize("bad", [3, None, [1, 2], b"path", object()])
def test_bad_sides_are_one_line_type_errors(bad):
    model = Net()
    before = frozen(model)
    with pytest.raises(TypeError) as info:
        compare(model, bad)
    assert "\n" not in str(info.value) and str(info.value).startswith("compare: b ")
    assert_unchanged(model, before)


@pytest.mark.parametrize("tol", [np.float32(0.6), np.float64(0.6), jnp.asarray(0.6)], ids=["f32", "f64", "0-d jax"])
def test_tol_takes_numpy_and_0d_array_scalars(tol):
    a, b = Net(), Net()
    b.lin.kernel[...] = a.lin.kernel[...] + 0.5
    assert compare(a, b, tol=tol)["lin.kernel"].status == "equal"
    assert compare(a, b, tol=np.float32(0.1))["lin.kernel"].status == "changed"


@pytest.mark.parametrize("tol", [-1.0, float("nan"), "0.1", True, np.True_, np.float32("nan"), np.ones(2)])
def test_bad_tol(tol):
    with pytest.raises(TypeError, match="tol= is a finite number"):
        compare(Net(), Net(), tol=tol)


def test_plain_data_and_renderings_escape_user_strings():
    a = {"<script>": nnx.Param(jnp.ones(2))}
    b = {"<script>": nnx.Param(jnp.zeros(2))}
    cmp = compare(a, b)
    data = json.loads(json.dumps(cmp.to_dict()))
    assert data["rows"][0]["path"] == "['<script>']" and data["rows"][0]["rel_change"] == 1.0
    html = cmp._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    text = str(cmp)
    assert text.splitlines()[0].endswith("values: 0 identical, 1 changed")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            cmp.to_pandas()
    else:
        assert list(cmp.to_pandas()["status"]) == ["changed"]


def test_snapshot_side_is_structure_only():
    cmp = compare(Net(), nnx_lab.snapshot(Net(width=5), stats=False))
    assert cmp.counts["shape"] == 7 and cmp.counts["abstract"] == 3


def test_the_static_tables_format_numbers_as_the_widget_does():
    from nnx_lab.core.render import format_number

    a = {"w": nnx.Param(jnp.array([1.0, 2.0, 3.0]))}
    b = {"w": nnx.Param(jnp.array([1.0, 2.0, 3.4567]))}
    cmp = compare(a, b)
    row = cmp["w"]
    cells = [format_number(row.rel_change), format_number(row.max_abs), format_number(row.cosine)]
    assert len(cells[0].replace(".", "").lstrip("0")) == 4  # four significant digits, as the widget's fmtNum
    line = next(s for s in str(cmp).splitlines() if s.startswith("w "))
    assert line.split()[2:5] == cells
    assert all(f">{c}<" in cmp._repr_html_() for c in cells)
