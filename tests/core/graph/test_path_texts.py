"""Path texts are remembered (a model's rows ask them at every refresh and comparison), never mixed
up: keys equal to an int but of another type (True, 1.0) keep their own text, unhashable keys work."""

from nnx_lab.core.compare._match import key_of
from nnx_lab.core.graph import path_text


def test_keys_equal_to_an_int_keep_their_own_text():
    assert (path_text(("a", 1)), path_text(("a", True)), path_text(("a", 1.0))) == ("a[1]", "a[True]", "a[1.0]")
    assert (key_of(("a", 1)), key_of(("a", True)), key_of(("a", 1.0))) == ("a/1", "a/True", "a/1.0")
    assert path_text(("a", True)) == "a[True]" and key_of(("a", True)) == "a/True"  # asked again


def test_a_path_asked_again_gets_the_same_text_and_odd_keys_work():
    path = ("blocks", 0, "attn", "kernel")
    assert path_text(path) == path_text(tuple(path)) == "blocks[0].attn.kernel"

    class Key:
        __hash__ = None  # unhashable

        def __repr__(self):
            return "Key()"

    assert path_text(("d", Key())) == "d[Key()]"
    assert key_of(("d", Key())) == "d/Key()"
