"""A one-off ``snapshot()`` of a model seen before reuses its structure, as a viewer's refresh does,
and still sees every change."""

import jax.numpy as jnp
from flax import nnx

import nnx_lab
from nnx_lab.core.snapshot import _recent


def _structure(model):
    return _recent._recent[(id(model), repr(None))][1]


def test_a_second_snapshot_of_an_unchanged_model_is_not_walked_again():
    model = nnx.Sequential(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.Linear(8, 2, rngs=nnx.Rngs(1)))
    first = nnx_lab.snapshot(model)
    structure = _structure(model)
    assert structure.walks == 1 and structure.hits == 0
    second = nnx_lab.snapshot(model)
    assert structure.walks == 1 and structure.hits == 1
    assert [r.path for r in second.rows] == [r.path for r in first.rows]
    assert second.rows[1].stats == first.rows[1].stats


def test_a_changed_model_is_seen_by_the_next_snapshot():
    model = nnx.Sequential(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.Linear(8, 2, rngs=nnx.Rngs(1)))
    nnx_lab.snapshot(model)
    nnx_lab.snapshot(model)
    model.layers[0].kernel.value = jnp.full((4, 8), 3.0)  # new values, same structure
    snap = nnx_lab.snapshot(model)
    kernel = next(r for r in snap.rows if r.path_text == "layers[0].kernel")
    assert kernel.stats["mean"] == 3.0 and kernel.stats["std"] == 0.0
    model.layers[1] = nnx.Linear(8, 5, rngs=nnx.Rngs(2))  # a new structure
    snap = nnx_lab.snapshot(model)
    assert next(r for r in snap.rows if r.path_text == "layers[1].kernel").shape == (8, 5)


def test_structures_are_held_weakly_and_few():
    models = [nnx.Linear(2, 2, rngs=nnx.Rngs(i)) for i in range(_recent.RECENT_STRUCTURES + 4)]
    for m in models:
        nnx_lab.snapshot(m)
    assert len(_recent._recent) <= _recent.RECENT_STRUCTURES
    del models, m
    import gc

    gc.collect()
    keep = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx_lab.snapshot(keep)  # entries of models that are gone are dropped
    assert [ref() for ref, _ in _recent._recent.values()] == [keep]
