import os
import tempfile

import jax.numpy as jnp
import pytest
from flax import nnx
from IPython.core.interactiveshell import InteractiveShell

from nnx_lab.core import compat

# The statistics kernels' disk cache (core/snapshot/_executables.py): a fresh one for each test
# session, so tests compile in a first session's conditions and never leave files in ~/.cache.
os.environ.setdefault("NNX_LAB_CACHE_DIR", tempfile.mkdtemp(prefix="nnx_lab-kernels-"))


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)


class Net(nnx.Module):
    """Every container kind: a user module, nnx.List, nnx.Dict, nnx.Sequential."""

    def __init__(self, rngs: nnx.Rngs):
        self.blocks = nnx.List([Block(rngs), Block(rngs)])
        self.heads = nnx.Dict({"a": nnx.Linear(8, 2, rngs=rngs), "b": nnx.Linear(8, 3, rngs=rngs)})
        self.seq = nnx.Sequential(nnx.Linear(2, 2, rngs=rngs), nnx.relu)
        self.step = nnx.Variable(jnp.array(0, jnp.int32))


@pytest.fixture
def net():
    if compat.missing("nnx.List"):
        pytest.skip(compat.missing("nnx.List"))
    return Net(nnx.Rngs(0))


@pytest.fixture
def ip():
    """An IPython shell with nnx_lab loaded (and unloaded afterwards)."""
    shell = InteractiveShell.instance()
    names = set(shell.user_ns)
    shell.run_line_magic("load_ext", "nnx_lab")
    yield shell
    shell.run_line_magic("unload_ext", "nnx_lab")
    for name in set(shell.user_ns) - names:  # one test's names never reach the next (one shell per session)
        del shell.user_ns[name]
