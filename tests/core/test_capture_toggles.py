"""The capture panel's toggles without a widget: every refused change leaves them as they were."""

import pytest
from flax import nnx

from nnx_lab.core.capture import CaptureToggles, Ticked, module_tree

pytestmark = pytest.mark.needs_flax("nnx.capture")


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)


class Net(nnx.Module):
    def __init__(self, rngs):
        self.blocks = nnx.List([Block(rngs), Block(rngs)])
        self.head = nnx.Linear(2, 1, rngs=rngs)


class Activation(nnx.Intermediate):
    pass


@pytest.fixture
def net():
    return Net(nnx.Rngs(0))


def test_module_tree_lists_parents_first_in_key_order(net):
    assert [(".".join(map(str, p)), cls) for p, cls in module_tree(net)] == [
        ("", "Net"),
        ("blocks", "List"),
        ("blocks.0", "Block"),
        ("blocks.0.linear", "Linear"),
        ("blocks.1", "Block"),
        ("blocks.1.linear", "Linear"),
        ("head", "Linear"),
    ]


def test_options_name_only_the_ticked_modules_when_some_are_unticked(net):
    toggles = CaptureToggles([nnx.Intermediate])
    modules = module_tree(net)
    assert toggles.options(modules) == {"types": (nnx.Intermediate,), "methods": False}
    toggles.select("blocks[1]", modules)
    only = toggles.options(modules)["only"]
    assert isinstance(only, Ticked)
    assert only.paths == {("blocks", 1), ("blocks", 1, "linear")}
    assert only(("blocks", 1), None) and not only(("blocks", 0), None)


def test_refused_changes_leave_the_toggles_as_they_were(net):
    toggles = CaptureToggles([nnx.Intermediate], methods=True)
    modules = module_tree(net)
    toggles.apply_message({"type": "module", "path": "head", "on": False}, modules)
    before = toggles.state()
    refused = [
        {"type": "type", "name": "Intermediate", "on": False},  # the last type
        {"type": "type", "name": "Nope", "on": True},
        {"type": "module", "path": "nowhere", "on": True},
        {"type": "methods", "on": "yes"},
        {"type": "explode"},
        ["not", "a", "dict"],
    ]
    for message in refused:
        with pytest.raises(ValueError):
            toggles.apply_message(message, modules)
        assert toggles.state() == before, message
    with pytest.raises(ValueError, match="no submodule at 'blocks/7'"):
        toggles.select(["blocks/0", "blocks/7"], modules)
    with pytest.raises(ValueError, match="at least one"):
        toggles.set_types([])
    with pytest.raises(TypeError, match="True or False"):
        toggles.methods = 1
    assert toggles.state() == before


def test_types_seen_later_are_offered_unticked_and_names_stay_unique():
    toggles = CaptureToggles([Activation])
    assert toggles.types == (Activation,)
    assert [t["name"] for t in toggles.to_dict([])["types"]] == ["Intermediate", "Perturbation", "Activation"]
    Other = type("Activation", (nnx.Intermediate,), {"__module__": "elsewhere"})
    assert toggles.offer(Other) == "elsewhere.Activation"  # same class name, another type
    assert toggles.types == (Activation,)


def test_new_submodules_start_ticked(net):
    toggles = CaptureToggles([nnx.Intermediate])
    toggles.apply_message({"type": "modules", "on": False}, module_tree(net))
    net.extra = nnx.Linear(1, 1, rngs=nnx.Rngs(1))
    assert toggles.ticked(module_tree(net)) == [("extra",)]
