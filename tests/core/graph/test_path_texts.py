"""Path texts are remembered (a model's rows ask them at every refresh and comparison), never mixed
up: keys equal to an int but of another type (True, 1.0) keep their own text, unhashable keys work.
The ``/``-joined key that ``compare(map=)`` hands to a function follows the same rule."""

import jax.numpy as jnp

import nnx_lab
from nnx_lab.core.graph import path_text


def map_keys(key) -> list[str]:
    """The paths ``compare(map=)`` gives its function for a state ``{"a": {key: array}}``."""
    seen: list[str] = []
    state = {"a": {key: jnp.ones(2)}}
    nnx_lab.compare(state, state, map=lambda p: seen.append(p) or p)
    return seen


def test_keys_equal_to_an_int_keep_their_own_text():
    assert (path_text(("a", 1)), path_text(("a", True)), path_text(("a", 1.0))) == ("a[1]", "a[True]", "a[1.0]")
    assert (map_keys(1), map_keys(True), map_keys(1.0)) == (["a/1"], ["a/True"], ["a/1.0"])
    assert path_text(("a", True)) == "a[True]" and map_keys(True) == ["a/True"]  # asked again


def test_a_path_asked_again_gets_the_same_text_and_odd_keys_work():
    path = ("blocks", 0, "attn", "kernel")
    assert path_text(path) == path_text(tuple(path)) == "blocks[0].attn.kernel"

    class Key:
        __hash__ = None  # unhashable

        def __repr__(self):
            return "Key()"

    assert path_text(("d", Key())) == "d[Key()]"
