"""Hostile and careless inputs (issue 25 §3): each gets a one-line error, a visible status or
bounded text, never a hang nor a traceback."""

import time

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_lab.core.live import NameTarget
from nnx_lab.core.watcher import Watcher


def test_a_followed_name_rebound_to_a_huge_list_is_refused_at_once():
    namespace = {"model": nnx.Linear(2, 3, rngs=nnx.Rngs(0))}
    watcher = Watcher(NameTarget("model", namespace), stats=False)
    assert watcher.refresh(force=True) and watcher.state == "live"
    namespace["model"] = list(range(10**6))
    start = time.perf_counter()
    for _ in range(3):  # an after-cell refresh at every cell
        watcher.refresh(force=True)
    assert time.perf_counter() - start < 2.0  # the old walk took minutes
    assert watcher.state == "missing"
    assert "`model` is a list of 1,000,000 entries" in watcher.status()["message"]
    namespace["model"] = [nnx.Linear(2, 3, rngs=nnx.Rngs(0))] + [None] * 50  # a list holding a model: followed
    assert watcher.refresh(force=True) and watcher.state == "live"
    namespace["model"] = {"w": [[[[{"deep": jnp.ones(2)}]]]]}  # nested plain containers of arrays too
    assert watcher.refresh(force=True) and watcher.state == "live"


def test_a_hundred_thousand_unmatched_gradient_leaves_cost_what_two_hundred_do():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    watcher.refresh(force=True)
    watcher.wait()
    grads = [jnp.float32(i) for i in range(100_000)]
    start = time.perf_counter()
    watcher.series.log(1, grads=grads)
    watcher.refresh(force=True)
    watcher.wait()
    assert time.perf_counter() - start < 20.0  # 90 s before: every leaf was reduced
    series = watcher.snapshot.series
    assert len(series.unmatched) == 200 and series.unmatched_more == 99_800  # listed, the rest counted
    from nnx_lab.core.training import series_meta

    meta = series_meta(series, 1)  # what the viewer says: 100,000 leaves, the first 200 listed
    assert meta["unmatched_total"] == 100_000 and len(meta["unmatched"]) == 200


def test_a_megabyte_gradient_key_is_quoted_not_echoed():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    key = "k" * 1_000_000
    watcher.series.log(1, grads={key: jnp.ones(2)})
    watcher.refresh(force=True)
    watcher.wait()
    message = watcher.status()["message"]
    assert "(999,800 more characters)" in message and len(message) < 1_000
    (unmatched,) = watcher.snapshot.series.unmatched
    assert len(unmatched[1]) < 300


def test_a_megabyte_layers_prefix_is_quoted_not_echoed():
    from nnx_lab import snapshot
    from nnx_lab.core.snapshot import LayerError, parse_layer_option

    with pytest.raises(LayerError) as error:
        snapshot(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), layers={"p" * 1_000_000: 0}, stats=False)
    assert len(str(error.value)) < 1_000 and "more characters" in str(error.value)
    with pytest.raises(TypeError) as error:
        parse_layer_option(["p" * 1_000_000 + "=x"])
    assert len(str(error.value)) < 1_000


@pytest.mark.parametrize("text", ["blocks=²", "blocks=--1", "blocks=-", "blocks=١"])
def test_a_layer_axis_that_is_not_an_ascii_integer_is_a_type_error(text):
    from nnx_lab.core.snapshot import parse_layer_option

    with pytest.raises(TypeError, match="is not PREFIX=AXIS"):
        parse_layer_option([text])


def test_scalars_that_are_keys_or_raise_in_float_are_problems_not_tracebacks():
    import numbers

    from nnx_lab.core.training import ScalarStore

    class Treacherous:  # registered as a Real; its __float__ raises
        def __float__(self):
            raise RuntimeError("no float today")

    numbers.Real.register(Treacherous)

    store = ScalarStore()
    store.log(1, {"key": jax.random.key(0), "old_key": jax.random.PRNGKey(0), "x": Treacherous()})
    assert store.problem == (
        "key: not a real number (dtype key<fry>); not recorded; old_key: not a scalar "
        "(shape (2,)); not recorded; x: not a float (RuntimeError); not recorded"
    )


def test_a_million_scalar_names_make_a_short_problem():
    from nnx_lab.core.training import MAX_NAMES, ScalarStore

    store = ScalarStore()
    for i in range(200_000):
        store.log(1, {f"name{i}": "not a number"})
    store.log(1, {"n" * 1_000_000: 1.0})
    assert len(store.problem) < 3_000 and store.problem.endswith("100,000+ more names not recorded")
    assert store.problem.count("not a number (str)") == MAX_NAMES
    store.collect(wait=True)
    (name,) = store.names
    assert name.endswith("(999,800 more characters)")


@pytest.mark.parametrize("given", ["grads", "updates"])
def test_transposed_gradients_are_said_and_listed_not_left_blank(given):
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    transposed = jax.tree.map(lambda x: x.T, nnx.state(model, nnx.Param))
    watcher.series.log(1, **{given: transposed})
    watcher.refresh(force=True)
    watcher.refresh(force=True)  # a refresh without gradients (a cell's end) keeps what the last ones said
    watcher.wait()
    assert (
        f"{given}: 1 leaf at a Variable's path with another shape, listed as unmatched: kernel: "
        "shape (4, 3) differs from kernel's (3, 4)"
    ) in watcher.status()["message"]
    assert [(u[0], u[1]) for u in watcher.snapshot.series.unmatched] == [(given, "kernel")]


def test_integer_gradients_say_why_their_norm_is_blank():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    watcher = Watcher(model)
    watcher.series.log(1, grads=jax.tree.map(lambda x: x.astype(jnp.int32), nnx.state(model, nnx.Param)))
    watcher.refresh(force=True)
    watcher.wait()
    assert (
        "grads: 2 leaves of integers, so no norm nor ratio (a gradient is a float array): bias (int32), kernel (int32)"
    ) in watcher.status()["message"]


@pytest.mark.parametrize(
    "dtype, names",
    [
        (jnp.int4, ("mean", "std", "min", "max", "zero_frac")),
        (jnp.float8_e4m3fn, ("mean", "std", "min", "max", "norm", "abs_max", "nan_count", "inf_count", "zero_frac")),
    ],
)
def test_int4_and_float8_variables_get_statistics_in_snapshot_and_viewer(dtype, names):
    from nnx_lab import snapshot

    class Low(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.arange(-3, 5, dtype=jnp.float32).astype(dtype))

    model = Low()
    (row,) = snapshot(model).rows
    assert row.status == "ok" and tuple(row.stats) == names
    assert (row.stats["mean"], row.stats["min"], row.stats["max"], row.stats["zero_frac"]) == (0.5, -3, 4, 0.125)
    watcher = Watcher(model)
    for _ in range(3):  # the first refreshes, then the viewer's one compiled program
        watcher.refresh(force=True)
        watcher.wait()
    (row,) = watcher.snapshot.rows
    assert row.status == "ok" and (row.stats["mean"], row.stats["max"]) == (0.5, 4)
