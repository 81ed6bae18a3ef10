"""A small model whose submodules have set_view options (Dropout, BatchNorm), shared by the view tests."""

from flax import nnx

import nnx_lab


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)


def make():
    return nnx.Sequential(Block(nnx.Rngs(0)), Block(nnx.Rngs(1)))


def modes(model):
    """(module path, argument, current value) of every set_view argument of ``model``."""
    return [(m.path_text, a.name, a.current) for m in nnx_lab.view_report(model).modules for a in m.args]
