"""Stacked layers (nnx.vmap / nnx.scan over blocks): a Variable with a layer axis gets one row per
layer, whose statistics equal numpy's per layer; the axis comes from flax's metadata or a declaration,
never from a shape alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from layer_models import RNG, assert_layers_equal_numpy, randomize, scanned, vmapped

from nnx_lab.core import compat
from nnx_lab.core.snapshot import LayerError, PendingSnapshot, StructureCache, snapshot
from nnx_lab.core.watcher import Watcher


def test_declared_layers_of_a_vmapped_stack_equal_numpy_per_layer():
    model = randomize(vmapped(metadata=False))
    snap = snapshot(model, layers={"blocks": 0})
    for path in ("blocks.lin.kernel", "blocks.lin.bias", "blocks.norm.scale", "blocks.steps"):
        var = snap[path]
        array = np.asarray(compat.get_value(eval("model." + path)))
        assert var.shape == array.shape
        assert_layers_equal_numpy(snap, path, array, 0)
    assert snap["head.kernel"].layer_axis is None
    assert snap.totals["all"]["count"] == len(jax.tree.leaves(nnx.state(model)))  # layers are not counted twice


def test_an_undeclared_leading_axis_stays_one_row():
    model = vmapped(metadata=False)
    snap = snapshot(model)
    assert all(r.layer_of is None and r.layer_axis is None for r in snap.rows)
    assert len(snap.rows) == len(jax.tree.leaves(nnx.state(model)))


@pytest.mark.parametrize("build", [vmapped, scanned], ids=["vmap", "scan"])
def test_flax_metadata_gives_the_layer_axis_without_a_declaration(build):
    model = randomize(build(annotate=True))
    snap = snapshot(model)
    kernel = np.asarray(compat.get_value(model.blocks.lin.kernel))
    assert_layers_equal_numpy(snap, "blocks.lin.kernel", kernel, 0)
    # flax records the partition name only on the annotated Variable: the others stay one row each
    assert snap["blocks.lin.bias"].layer_axis is None
    assert not any(r.layer_of is not None and "bias" in r.path_text for r in snap.rows)


@pytest.mark.parametrize("build", [vmapped, scanned], ids=["vmap", "scan"])
def test_declared_layers_of_nnx_vmap_and_nnx_scan_stacks(build):
    model = randomize(build())
    snap = snapshot(model, layers={("blocks",): 0})
    for path in ("blocks.lin.kernel", "blocks.norm.bias"):
        assert_layers_equal_numpy(snap, path, np.asarray(compat.get_value(eval("model." + path))), 0)


def test_a_layer_axis_other_than_the_first():
    class Wide(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.asarray(RNG.normal(size=(2, 5, 3)).astype(np.float32)))

    model = Wide()
    snap = snapshot(model, layers={"w": -1})
    assert_layers_equal_numpy(snap, "w", np.asarray(compat.get_value(model.w)), 2)
    assert snap["w[layer 1]"].shape == (2, 5)
    numpy_axis = snapshot(model, layers={"w": np.int64(-1)})  # a numpy integer is an axis too
    assert [r.path_text for r in numpy_axis.rows] == [r.path_text for r in snap.rows]


def test_nan_in_one_layer_is_counted_in_that_layer_only():
    model = vmapped(metadata=False)
    k = np.asarray(compat.get_value(model.blocks.lin.kernel)).copy()
    k[1, 0, 0], k[1, 2, 3] = np.nan, np.inf
    compat.set_value(model.blocks.lin.kernel, jnp.asarray(k))
    snap = snapshot(model, layers={"blocks": 0})
    counts = [
        (
            snap[f"blocks.lin.kernel[layer {i}]"].stats["nan_count"],
            snap[f"blocks.lin.kernel[layer {i}]"].stats["inf_count"],
        )
        for i in range(3)
    ]
    assert counts == [(0, 0), (1, 1), (0, 0)]
    finite = k[1][np.isfinite(k[1])]
    assert snap["blocks.lin.kernel[layer 1]"].stats["mean"] == pytest.approx(finite.mean(), rel=1e-5)
    assert snap.first_nonfinite.path_text == "blocks.lin.kernel"


@pytest.mark.parametrize(
    "layers, message",
    [
        ({"blockz": 0}, "no Variable under 'blockz'"),
        ({"blocks": 3}, "no axis 3"),
    ],
)
def test_a_declaration_that_does_not_fit_is_one_line_before_anything_runs(layers, message):
    model = vmapped(metadata=False)
    before = jax.tree.map(np.asarray, nnx.state(model))
    for call in (lambda: snapshot(model, layers=layers), lambda: Watcher(model, layers=layers)):
        with pytest.raises(LayerError, match=message) as info:
            call()
        assert "\n" not in str(info.value)
    jax.tree.map(np.testing.assert_array_equal, before, jax.tree.map(np.asarray, nnx.state(model)))


@pytest.mark.parametrize(
    "layers", [[("blocks", 0)], {"blocks": "0"}, {3: 0}, {"blocks": True}, {"blocks": np.float32(0)}]
)
def test_a_declaration_of_the_wrong_type_is_a_type_error(layers):
    with pytest.raises(TypeError, match="layers="):
        snapshot(vmapped(metadata=False), layers=layers)


def test_none_turns_the_metadata_axis_off():
    snap = snapshot(vmapped(annotate=True), layers={"blocks": None})
    assert all(r.layer_of is None for r in snap.rows)


def test_the_structure_cache_reuses_the_layer_rows_and_sees_new_numbers():
    model = randomize(vmapped(metadata=False))
    cache = StructureCache()
    first = PendingSnapshot(model, structure=cache, layers={"blocks": 0}).finish()
    compat.set_value(model.blocks.norm.scale, compat.get_value(model.blocks.norm.scale) * 2)
    again = PendingSnapshot(model, structure=cache, layers={"blocks": 0}).finish()
    assert cache.hits == 1 and again.description is first.description
    assert [r.path for r in again.rows] == [r.path for r in first.rows]
    scale = np.asarray(compat.get_value(model.blocks.norm.scale))
    assert_layers_equal_numpy(again, "blocks.norm.scale", scale, 0)
    payload = again.to_dict()
    child = [r.path_text for r in again.rows].index("blocks.norm.scale[layer 2]")
    parent = payload["rows"]["layer_of"][child]
    assert again.rows[parent].path_text == "blocks.norm.scale" and payload["rows"]["layer"][child] == 2
    assert payload["rows"]["parent"][child] == payload["rows"]["parent"][parent]  # beside it, not under a node
    assert "layer_of" not in snapshot(model).to_dict()["rows"]  # no stacks: no columns


def test_the_nan_alert_counts_a_stacked_variable_once_and_names_it():
    model = vmapped(metadata=False)
    k = np.asarray(compat.get_value(model.blocks.lin.kernel)).copy()
    k[2, 1, 1] = np.nan
    compat.set_value(model.blocks.lin.kernel, jnp.asarray(k))
    watcher = Watcher(model, layers={"blocks": 0})
    watcher.refresh(force=True)
    assert watcher.alert.now_variables == 1
    assert watcher.alert.first["where"] == "blocks.lin.kernel"
    assert watcher.snapshot["blocks.lin.kernel[layer 2]"].stats["nan_count"] == 1


def test_a_followed_name_gets_its_layers_checked_now_and_expanded_at_every_refresh():
    from nnx_lab.core.live import NameTarget

    namespace = {"model": vmapped(metadata=False)}
    with pytest.raises(LayerError, match="no axis 5"):
        Watcher(NameTarget("model", namespace), layers={"blocks": 5})
    watcher = Watcher(NameTarget("model", namespace), layers={"blocks": 0})
    watcher.refresh(force=True)
    assert watcher.snapshot["blocks.lin.kernel[layer 2]"].shape == (4, 6)
    namespace["model"] = vmapped(n=2, metadata=False)  # rebound: a stack of 2
    watcher.refresh(force=True)
    assert [r.layer for r in watcher.snapshot.rows if r.layer_of == 0] == [0, 1]
