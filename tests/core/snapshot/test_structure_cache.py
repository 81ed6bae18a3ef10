"""A viewer walks a model with flax once and then reuses the structure: every change of structure
must be seen (a walk again), and a reused structure must describe exactly what a walk describes."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from nnx_lab.core.snapshot import PendingSnapshot, StructureCache, snapshot
from nnx_lab.core.watcher import Watcher


class Tied(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(5, 3, rngs=rngs)
        self.head = self.embed  # the same module twice: aliases
        self.norm = nnx.LayerNorm(3, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)


def _rows(snap):
    return [dataclasses.replace(r, stats=None) for r in snap.rows], snap.nodes, snap.root_type


def _same_as_a_walk(cache, obj):
    """Describe ``obj`` through the cache and with a fresh walk: the same rows, nodes, statistics."""
    cached = PendingSnapshot(obj, structure=cache).finish()
    fresh = snapshot(obj)
    assert _rows(cached) == _rows(fresh)
    for a, b in zip(cached.rows, fresh.rows):
        # One of them may come from a viewer's one-pass program, the other from the exact kernels:
        # equal to float32 rounding (a wrong or stale array would be far off).
        assert (a.stats is None) == (b.stats is None) and (a.stats or {}).keys() == (b.stats or {}).keys(), a.path
        for k, v in (b.stats or {}).items():
            assert a.stats[k] == (v if v is None else pytest.approx(v, rel=1e-5, abs=1e-7)), (a.path, k)
    return cached


def test_reused_between_refreshes_and_equal_to_a_walk(net):
    cache = StructureCache()
    _same_as_a_walk(cache, net)
    assert (cache.walks, cache.hits) == (1, 0)
    net.blocks[0].linear.kernel.value = net.blocks[0].linear.kernel.value * 2  # a training step: new arrays
    net.step.value = net.step.value + 1
    _same_as_a_walk(cache, net)
    assert (cache.walks, cache.hits) == (1, 1)


def test_aliases_and_tied_modules_reuse_correctly():
    model, cache = Tied(nnx.Rngs(0)), StructureCache()
    first = _same_as_a_walk(cache, model)
    assert [a for r in first.rows for a in r.aliases]  # head.embedding is an alias
    model.embed.embedding.value = model.embed.embedding.value + 1
    _same_as_a_walk(cache, model)
    assert cache.hits == 1


def test_two_variables_holding_one_array_stay_apart_after_they_diverge():
    model, cache = nnx.Linear(3, 3, rngs=nnx.Rngs(0)), StructureCache()
    shared = jnp.ones(3)
    model.bias.value = shared  # two Variables holding one array object
    model.extra = nnx.Param(shared)
    _same_as_a_walk(cache, model)
    model.bias.value = shared * 5  # now they differ: each row must get its own array's numbers
    snap = _same_as_a_walk(cache, model)
    assert snap["bias"].stats["mean"] == 5.0 and snap["extra"].stats["mean"] == 1.0


@pytest.mark.parametrize(
    "change",
    [
        "add_variable",
        "remove_variable",
        "replace_module",
        "rename_attribute",
        "shape",
        "dtype",
        "metadata",
        "swap_blocks",
        "variable_type",
        "add_empty_module",
    ],
)
def test_every_structure_change_is_seen(net, change):
    cache = StructureCache()
    _same_as_a_walk(cache, net)
    walks = cache.walks
    if change == "add_variable":
        net.blocks[1].extra = nnx.Param(jnp.zeros(2))
    elif change == "remove_variable":
        del net.blocks[1].linear.bias
    elif change == "replace_module":
        net.heads["a"] = nnx.Linear(8, 2, rngs=nnx.Rngs(1))  # same class and shapes, new Variables
    elif change == "rename_attribute":
        net.blocks[0].other = net.blocks[0].linear
        del net.blocks[0].linear
    elif change == "shape":
        net.heads["b"].kernel.value = jnp.zeros((8, 4))
    elif change == "dtype":
        net.heads["b"].kernel.value = net.heads["b"].kernel.value.astype(jnp.bfloat16)
    elif change == "metadata":
        net.heads["b"].kernel.set_metadata("note", "changed")
    elif change == "swap_blocks":
        a, b = net.blocks[0], net.blocks[1]
        b.linear.kernel.value = b.linear.kernel.value + 100  # tell them apart
        net.blocks[0], net.blocks[1] = b, a
    elif change == "variable_type":
        net.step = nnx.BatchStat(net.step.value)
    elif change == "add_empty_module":
        net.act = nnx.Dropout(0.2)
    snap = _same_as_a_walk(cache, net)
    if change in ("replace_module", "swap_blocks"):
        # The same rows as before (same classes, names, shapes): reusing the structure is right, and
        # the numbers come from the arrays now at each path.
        assert cache.walks == walks
    else:
        assert cache.walks == walks + 1, change
    if change == "swap_blocks":
        assert snap["blocks[0].linear.kernel"].stats["min"] >= 90


def test_a_donated_buffer_is_seen_and_recovers(net):
    cache = StructureCache()
    _same_as_a_walk(cache, net)
    old = net.heads["a"].kernel.value
    old.delete()
    snap = PendingSnapshot(net, structure=cache).finish()
    assert snap[("heads", "a", "kernel")].status == "deleted"
    net.heads["a"].kernel.value = jnp.ones((8, 2))
    snap = _same_as_a_walk(cache, net)
    assert snap[("heads", "a", "kernel")].status == "ok" and snap[("heads", "a", "kernel")].stats["mean"] == 1.0


def test_sharding_change_is_seen():
    model, cache = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), StructureCache()
    _same_as_a_walk(cache, model)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x"))
    model.bias.value = jax.device_put(model.bias.value, sharding)
    snap = _same_as_a_walk(cache, model)
    assert cache.walks == 2 and "x" in (snap["bias"].sharding or "")


def test_tracers_are_described_afresh():
    model, cache = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), StructureCache()
    PendingSnapshot(model, structure=cache).finish()
    seen = {}

    @nnx.jit
    def f(m):
        seen["status"] = PendingSnapshot(m, structure=cache).finish()["kernel"].status
        return m(jnp.ones((1, 2)))

    f(model)
    assert seen["status"] == "tracer"
    assert PendingSnapshot(model, structure=cache).finish()["kernel"].status == "ok"


def test_optimizer_state_reuses_its_structure():
    model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    cache = StructureCache()
    _same_as_a_walk(cache, opt)

    @nnx.jit
    def step(model, opt):
        grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((2, 4))) ** 2))(model)
        opt.update(model, grads)

    step(model, opt)
    _same_as_a_walk(cache, opt)
    assert cache.hits == 1


def test_watcher_reuses_the_structure_and_drops_it_with_the_model():
    net = Tied(nnx.Rngs(0))
    w = Watcher(net)
    for _ in range(3):
        w.refresh(force=True)
    assert w._structure.hits >= 2
    del net
    import gc

    gc.collect()
    assert w._structure.plan is None and w.state == "gone"


def test_rows_first_then_statistics_with_one_walk():
    model = Tied(nnx.Rngs(0))
    w = Watcher(model)
    w.show_rows_first()
    assert w.refreshes == 0 and w.snapshot is not None
    assert all(row.stats is None for row in w.snapshot.rows) and len(w.snapshot.rows) == 5
    w.refresh(force=True)
    assert w.refreshes == 1 and w.snapshot["embed.embedding"].stats["norm"] > 0
    assert (w._structure.walks, w._structure.hits) == (1, 1)


class TwoHeads(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(3, 3, rngs=rngs)
        self.b = nnx.Linear(3, 3, rngs=rngs)
        self.h1 = self.a  # tied to a
        self.h2 = self.b  # tied to b


@pytest.mark.parametrize("change", ["untie", "tie", "move_tie"])
def test_a_tie_made_undone_or_moved_is_seen(change):
    """A tie is in neither the treedef nor the arrays' specs: the same classes, names and shapes
    whichever module an attribute points at. The rows (one per Variable, the others as aliases)
    must follow it at the next refresh."""
    model, cache = TwoHeads(nnx.Rngs(0)), StructureCache()
    _same_as_a_walk(cache, model)
    _same_as_a_walk(cache, model)
    if change == "untie":
        model.h1 = nnx.Linear(3, 3, rngs=nnx.Rngs(1))  # new containers: the careful flatten
    elif change == "tie":
        model.b = model.a  # b, h1 and a are one module now; h2 keeps the old b
    else:
        model.h1, model.h2 = model.b, model.a  # the very same containers, tied the other way round
    snap = _same_as_a_walk(cache, model)
    aliases = {r.path_text: sorted(".".join(map(str, a)) for a in r.aliases) for r in snap.rows}
    if change == "untie":
        assert aliases["a.kernel"] == [] and "h1.kernel" in aliases
    elif change == "tie":
        assert aliases["a.kernel"] == ["b.kernel", "h1.kernel"]
    else:
        assert aliases["a.kernel"] == ["h2.kernel"] and aliases["b.kernel"] == ["h1.kernel"]
