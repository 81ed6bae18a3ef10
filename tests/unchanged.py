""" "The model is exactly as it was": its graph, its state's structure and every array's value.

Tests that feed bad input (or interrupt a call) take ``before = frozen(model)`` first and
``assert_unchanged(model, before)`` afterwards. Importable from every test folder: pytest puts
``tests/`` on ``sys.path`` for ``tests/conftest.py``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def _host(x):
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def frozen(model):
    """The model's graphdef and a host copy of its state."""
    graphdef, state = nnx.split(model)
    return graphdef, jax.tree.map(_host, state)


def assert_unchanged(model, before):
    graphdef, state = frozen(model)
    assert graphdef == before[0]
    assert jax.tree.structure(state) == jax.tree.structure(before[1])
    assert all(
        np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(before[1]))
    )
