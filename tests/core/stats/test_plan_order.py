"""A viewer's program is the same in every session: its arrays' order never depends on memory
addresses, or its text (and its key in the disk cache) changes and a later session compiles it again."""

import builtins

import jax.numpy as jnp

from nnx_lab.core.stats import _plan


def chunk_dtypes(arrays):
    plan = _plan.LaunchPlan(arrays)
    [(chunk, _)] = plan.chunks
    return [str(arrays[plan.index[m]].dtype) for m in chunk]


def test_a_chunks_order_does_not_follow_the_kernels_addresses(monkeypatch):
    arrays = [jnp.arange(4, dtype=jnp.int32), jnp.ones((6, 5)), jnp.ones(5), jnp.arange(3, dtype=jnp.int32)]
    order = chunk_dtypes(arrays)
    assert order == ["float32", "float32", "int32", "int32"]  # the float kernel's arrays first, then the integer's
    # Addresses ordered the other way round (another process): the same order.
    monkeypatch.setattr(_plan, "id", lambda obj: -builtins.id(obj), raising=False)
    assert chunk_dtypes(arrays) == order


def test_kernel_ranks_name_the_kernel_not_its_address():
    from nnx_lab.core.stats._kernels import KERNELS
    from nnx_lab.core.stats._layered import layered

    ranks = [_plan.kernel_rank(k) for k in KERNELS]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(KERNELS)
    assert _plan.kernel_rank(layered(KERNELS[0], 1)) == _plan.kernel_rank(layered(KERNELS[0], 1)) != ranks[0]
    assert str(builtins.id(KERNELS[0])) not in _plan.kernel_rank(KERNELS[0])
