"""The ledger's advice for IPython's output cache really frees the value: IPython keeps a displayed
value in Out, `_N`, its hidden namespace and the display hook's `_`/`__`/`___`, so `Out.pop(n);
del _n` left it alive (found by notebooks/09_memory.ipynb); the advised statement is run here, in a
real shell, and the arrays are gone."""

import gc
import weakref

import jax.numpy as jnp
from flax import nnx

import nnx_lab


def test_following_the_advice_for_an_output_frees_the_model(ip):
    ip.user_ns["model"] = nnx.Linear(256, 256, rngs=nnx.Rngs(0))
    ip.user_ns["nnx"] = nnx
    ip.run_cell("before = nnx.clone(model)", store_history=True)
    n = ip.execution_count
    ip.run_cell("before", store_history=True)  # the cell's value: Out[n], _n, `_`
    ref = weakref.ref(ip.user_ns["before"])
    # training replaces the model's arrays (a clone shared them); the user's own `_` freezes IPython's
    ip.run_cell(
        "for _ in range(2):\n    model.kernel[...] = model.kernel[...] * 2\nmodel.bias[...] = model.bias[...] + 1\nTrue",
        store_history=True,
    )
    ip.run_cell("del before", store_history=True)
    gc.collect()  # earlier tests' garbage: the totals below differ by the advice alone
    ledger = nnx_lab.memory(namespace=ip.user_ns)
    (advice,) = [f for f in ledger.freeing if f.holders == (f"Out[{n}]",)]
    assert advice.statement == f"%xdel _{n}" and advice.bytes == (256 * 256 + 256) * 4
    ip.run_cell(advice.statement, store_history=True)
    gc.collect()
    assert ref() is None, [type(r).__name__ for r in gc.get_referrers(ref())]
    after = nnx_lab.memory(namespace=ip.user_ns)
    assert ledger.total() - after.total() == advice.bytes
    assert not [r for r in after.rows if r.holder == "(unreached)" and r.bytes >= advice.bytes]


def test_the_advice_for_the_whole_output_cache_frees_every_output(ip):
    ip.user_ns["jnp"] = jnp
    ip.run_line_magic("reset", "-f out")  # `_`/`__`/`___` follow the outputs again (an earlier test set `_`)
    refs = []
    for size in (3000, 5000):
        n = ip.execution_count
        ip.run_cell(f"jnp.ones(({size},)) * 2", store_history=True)  # a cell's value: Out[n], _n, `_`
        refs.append(weakref.ref(ip.user_ns["Out"][n]))
    ip.run_cell("1", store_history=True)
    gc.collect()
    ledger = nnx_lab.memory(namespace=ip.user_ns)
    (advice,) = [f for f in ledger.freeing if f.holders == ("the output cache",)]
    assert advice.bytes >= (3000 + 5000) * 4
    ip.run_cell(advice.statement, store_history=True)
    gc.collect()
    assert [r() is None for r in refs] == [True, True]
