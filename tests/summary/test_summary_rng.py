"""A Dropout's FLOPs come with their reason (issue 35): random-bit generation (jax.random's threefry
hash) costs FLOPs as XLA counts them, often more than the layer's arithmetic; the text, the HTML and
the widget (a marked figure, a footnote, the cell's tooltip) say so."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

import nnx_lab
from nnx_lab.widgets.summary import payload


class Block(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(4, 8, rngs=nnx.Rngs(0))
        self.drop = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1))

    def __call__(self, x):
        return self.drop(self.lin(x))


def _xla_flops(eqn) -> int:
    """XLA's cost analysis of one equation lowered alone: its FLOPs."""
    args = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
    cost = jax.jit(lambda *xs: eqn.primitive.bind(*xs, **eqn.params)).lower(*args).cost_analysis() or {}
    if isinstance(cost, (list, tuple)):  # older jax: one dict per computation
        cost = cost[0] if cost else {}
    return int(cost.get("flops", 0))


def _random_bits_flops(shape) -> int:
    """XLA's FLOPs of the random_bits equations of a dropout mask of ``shape``, counted directly."""
    jaxpr = jax.make_jaxpr(lambda k: jax.random.bernoulli(k, 0.5, shape))(jax.random.key(0))
    total = 0

    def walk(j):
        nonlocal total
        for e in j.eqns:
            subs = [getattr(v, "jaxpr", v) for v in e.params.values() if hasattr(getattr(v, "jaxpr", v), "eqns")]
            for sub in subs:
                walk(sub)
            if not subs and e.primitive.name in ("random_bits", "threefry2x32"):
                total += _xla_flops(e)

    walk(jaxpr.jaxpr)
    return total


def test_dropout_flops_say_they_come_from_random_bit_generation():
    model = nnx.Sequential(Block(), nnx.Linear(8, 2, rngs=nnx.Rngs(1)))
    s = nnx_lab.summary(model, jnp.ones((3, 4)), memory=False)
    drop, lin = s["layers[0].drop"], s["layers[0].lin"]
    assert drop.rng_flops >= _random_bits_flops((3, 8)) > 0 and drop.rng_flops <= drop.flops
    assert lin.rng_flops == 0 and s["layers[1]"].rng_flops == 0
    assert s.rows[0].rng_flops == drop.rng_flops  # the model's row includes it
    text = s.to_text()
    line = next(t for t in text.splitlines() if "layers[0].drop" in t)
    assert f"{drop.flops}*" in line  # the figure is marked ...
    lin_line = next(t for t in text.splitlines() if "layers[0].lin" in t)
    assert "*" not in lin_line
    note = text.splitlines()[-1]  # ... and the footnote says why, naming the Dropout
    assert note.startswith("* includes random-bit generation") and "threefry" in note
    assert f"layers[0].drop (Dropout): {drop.rng_flops:,} of its {drop.flops:,}" in note
    assert "layers[0] (Block)" not in note  # the Dropout inside it is named, not each parent
    assert "random-bit generation" in s.to_html()
    p = payload(s)
    rows = {r["path_text"]: r for r in p["rows"]}
    assert rows["layers[0].drop"]["flops_text"].endswith("*")
    assert (
        f"{drop.rng_flops:,} of these {drop.flops:,} FLOPs generate random bits" in rows["layers[0].drop"]["flops_note"]
    )
    assert rows["layers[0].lin"]["flops_note"] == "" and not rows["layers[0].lin"]["flops_text"].endswith("*")
    assert p["header"][-1] == note  # the widget's header carries the footnote


def test_a_model_without_random_bits_has_no_mark_nor_footnote():
    s = nnx_lab.summary(nnx.Linear(4, 8, rngs=nnx.Rngs(0)), jnp.ones((3, 4)), memory=False)
    assert s.rows[0].rng_flops == 0 and "*" not in s.to_text() and s.rng_note() is None
    assert "random" not in " ".join(payload(s)["header"])


def test_alike_dropouts_are_said_once_in_the_footnote():
    """A transformer's Dropouts (one per block, the same shapes) make one clause of the footnote, with
    their count and the first three paths, not a paragraph naming each."""

    class Parallel(nnx.Module):
        def __init__(self):
            self.a, self.b, self.c, self.d, self.e = (Block() for _ in range(5))

        def __call__(self, x):
            return sum(blk(x) for blk in (self.a, self.b, self.c, self.d, self.e))

    s = nnx_lab.summary(Parallel(), jnp.ones((3, 4)), memory=False)
    drop = s["a.drop"]
    note = s.rng_note()
    assert note is not None
    assert (
        f"5 Dropout calls, {drop.rng_flops:,} of their {drop.flops:,} each: a.drop, b.drop, c.drop and 2 more"
    ) in note
    assert "d.drop" not in note and note.count("Dropout") == 2  # the clause, and "e.g. a Dropout's mask"

    # one of them counted one FLOP fewer (XLA did so for one of a ViT's Dropouts): still one clause
    odd = dataclasses.replace(s["e.drop"], flops=drop.flops - 1)
    s = dataclasses.replace(s, rows=[odd if r.path == "e.drop" else r for r in s.rows])
    note = s.rng_note()
    assert note is not None and note.count("Dropout") == 2, note
    assert f"5 Dropout calls, {drop.rng_flops:,} of their {drop.flops - 1:,}–{drop.flops:,} each: a.drop" in note


class TakesRngs(nnx.Module):
    """As flax's ViT example: the call takes ``rngs`` and hands it to its Dropout."""

    def __init__(self):
        self.lin = nnx.Linear(4, 8, rngs=nnx.Rngs(0))
        self.drop = nnx.Dropout(0.5)

    def __call__(self, x, rngs=None):
        return self.drop(self.lin(x), rngs=rngs)


def test_a_call_given_rngs_is_summarized_with_rngs_named_as_an_input():
    model = TakesRngs()
    before = jax.tree.map(lambda v: v, nnx.state(model))
    s = nnx_lab.summary(model, jnp.ones((3, 4)), rngs=nnx.Rngs(7), memory=False)  # a default stream: any name
    assert s.rows[0].inputs == "((float32[3,4],), {rngs: <Rngs>})"
    assert s["drop"].inputs == "((float32[3,8],), {rngs: <Rngs>})"
    assert s["drop"].rng_flops > 0
    assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), before, nnx.state(model)))
