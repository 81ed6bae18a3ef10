"""A model as ``nnx.split`` hands it out: ``(graphdef, state)`` or ``(graphdef, state1, state2, ...)``.

Functional training loops keep a model as such a pair (``nnx.merge`` inside a jitted step). Its
Variables are the states'; the graphdef only names the model's class. :func:`split_pair` recognises
the tuple; a walk of it is the walk of its states merged (paths as in the model), under the class name.

>>> from flax import nnx
>>> graphdef, params, rest = nnx.split(nnx.BatchNorm(2, rngs=nnx.Rngs(0)), nnx.Param, ...)
>>> pair = split_pair((graphdef, params, rest))
>>> pair.type_name, sorted(pair.state())
('BatchNorm', ['bias', 'mean', 'scale', 'var'])
>>> split_pair((1, 2)) is None
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from flax import nnx


@dataclasses.dataclass(frozen=True)
class SplitPair:
    graphdef: nnx.GraphDef
    states: tuple  # one or more Mappings (nnx.State), the Variables of the model

    @property
    def type_name(self) -> str:
        """The class of the model the graphdef describes (``Linear``), else ``GraphDef`` (flax keeps the
        class in its first NodeDef)."""
        nodes = getattr(self.graphdef, "nodes", None)
        root = getattr(nodes[0], "type", None) if nodes else None
        if isinstance(root, type):
            return root.__name__
        return root if isinstance(root, str) else "GraphDef"

    def state(self) -> Mapping:
        """The Variables of every state in one State (the very Variables: nothing is copied)."""
        if len(self.states) == 1:
            return self.states[0]
        return nnx.merge_state(*self.states)


def split_pair(obj: object) -> SplitPair | None:
    """The ``(graphdef, state, ...)`` tuple ``nnx.split`` returns, or None for anything else."""
    if (
        type(obj) is tuple
        and len(obj) >= 2
        and isinstance(obj[0], nnx.GraphDef)
        and all(isinstance(s, Mapping) for s in obj[1:])
    ):
        return SplitPair(obj[0], obj[1:])
    return None
