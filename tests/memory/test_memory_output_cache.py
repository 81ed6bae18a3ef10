"""The ledger's advice for IPython's output cache really frees the value: IPython keeps a displayed
value in Out, `_N`, its hidden namespace and the display hook's `_`/`__`/`___`, so `Out.pop(n);
del _n` left it alive (found by notebooks/09_memory.ipynb); the advised statement is run here, in a
real shell, and the arrays are gone."""

import gc
import json
import subprocess
import sys
import weakref

import jax.numpy as jnp

import nnx_lab

SESSION = r"""
import gc, json, weakref
from IPython.testing.globalipapp import start_ipython
from flax import nnx
import nnx_lab

ip = start_ipython()
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
gc.collect()
ledger = nnx_lab.memory(namespace=ip.user_ns)
(advice,) = [f for f in ledger.freeing if f.holders == (f"Out[{n}]",)]
ip.run_cell(advice.statement, store_history=True)
gc.collect()
after = nnx_lab.memory(namespace=ip.user_ns)
print("RESULT" + json.dumps({
    "n": n, "statement": advice.statement, "bytes": advice.bytes, "freed": ledger.total() - after.total(),
    "alive": ref() is not None,
    "big_unreached": [r.bytes for r in after.rows if r.holder == "(unreached)" and r.bytes >= advice.bytes],
}))
"""


def test_following_the_advice_for_an_output_frees_the_model():
    """In a session of its own (this process's shared shell holds earlier tests' outputs and names)."""
    done = subprocess.run([sys.executable, "-c", SESSION], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.rsplit("RESULT", 1)[1])
    assert got["statement"] == f"%xdel _{got['n']}" and got["bytes"] == (256 * 256 + 256) * 4
    assert not got["alive"]
    assert got["freed"] == got["bytes"], got
    assert got["big_unreached"] == []


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
