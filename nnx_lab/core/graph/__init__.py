"""The model as a graph: one walk with flax's own graph API (leaves, containers, aliases), path
text, and module paths and selection (``only=``) shared by captures, view reports and magics.

>>> from flax import nnx
>>> model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
>>> [path_text(leaf.path) for leaf in walk_graph(model).leaves]
['layers[0].bias', 'layers[0].kernel']
"""

from ._flatten import CyclicGraph, SharedNode, TooDeep, TreeDef, flatten, flatten_known, sigint_deferred
from ._hooks import Recorder, Recording, hook, hooked, module_methods, unhook
from ._index import index_graph
from ._kinds import child_of, is_variable
from ._modules import (
    OnlyError,
    is_module_path,
    module_paths_text,
    path_roots,
    select_modules,
    selector,
)
from ._pair import split_pair
from ._paths import Path, path_key, path_text, plain_path
from ._shared import aliases_at, shared_prefixes
from ._walk import GraphWalk, Leaf, check_inspectable, walk_graph

__all__ = [
    "CyclicGraph",
    "GraphWalk",
    "Leaf",
    "OnlyError",
    "Path",
    "Recorder",
    "Recording",
    "SharedNode",
    "TooDeep",
    "TreeDef",
    "aliases_at",
    "check_inspectable",
    "child_of",
    "flatten",
    "flatten_known",
    "hook",
    "hooked",
    "index_graph",
    "is_module_path",
    "is_variable",
    "module_methods",
    "module_paths_text",
    "path_key",
    "path_roots",
    "path_text",
    "plain_path",
    "select_modules",
    "selector",
    "shared_prefixes",
    "sigint_deferred",
    "split_pair",
    "unhook",
    "walk_graph",
]
