"""Matching two sides' entries by path (``map=`` renames b's paths into a's), and what differs in
their structure: paths on one side only, shape / dtype / Variable type / sharding, tied weights."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from ..graph import Path, plain_path
from ..text import first_line, quote_repr
from ._sides import Entry, Side

__all__ = ["Match", "key_of", "match_sides", "renamer"]


def key_of(path: Path) -> str:
    """A path as the ``/``-joined text ``map=`` sees (``params/Dense_0/kernel``, ``layers/0/kernel``)."""
    return _cached_key(path) if plain_path(path) else _key(path)  # (see graph.plain_path)


def _key(path: Path) -> str:
    return "/".join(str(k) for k in path)


_cached_key = functools.lru_cache(maxsize=1 << 16)(_key)  # asked for every entry of every compare


def renamer(map: Any) -> Callable[[str], str | None]:
    """``map=`` as a function of b's key -> a's key (None: leave b's entry unmatched).

    A dict renames path prefixes (whole segments, ``.`` or ``/`` between them; the longest prefix
    wins; ``""`` as a value drops the prefix); a function gets and returns the ``/`` text.

    >>> f = renamer({"params/Dense_0": "linear", "params": ""})
    >>> f("params/Dense_0/kernel"), f("params/bias"), f("batch_stats/mean")
    ('linear/kernel', 'bias', 'batch_stats/mean')
    """
    if map is None:
        return lambda key: key
    if callable(map) and not isinstance(map, Mapping):

        def call(key: str) -> str | None:
            out = map(key)
            if out is not None and not isinstance(out, str):
                raise TypeError(f"compare: map({key!r}) returned {type(out).__name__}; it must return a str or None")
            return out

        return call
    if not isinstance(map, Mapping):
        raise TypeError(f"compare: map= is a dict of renames or a function of the path text, not {type(map).__name__}")
    rules = []
    for old, new in map.items():
        if not isinstance(old, str) or not isinstance(new, str):
            raise TypeError(f"compare: map= renames str to str; got {quote_repr(old)}: {quote_repr(new)}")
        rules.append(
            (
                tuple(p for p in old.replace(".", "/").split("/") if p),
                tuple(p for p in new.replace(".", "/").split("/") if p),
            )
        )
    rules.sort(key=lambda r: -len(r[0]))

    def rename(key: str) -> str:
        parts = tuple(key.split("/"))
        for old, new in rules:
            if parts[: len(old)] == old:
                return "/".join(new + parts[len(old) :])
        return key

    return rename


@dataclasses.dataclass
class Match:
    """One row before values: a matched pair, or an entry on one side only."""

    a: Entry | None
    b: Entry | None
    status: str | None = None  # missing, unexpected, shape, tied: a structural status; None: compare values
    mismatch: list[str] = dataclasses.field(default_factory=list)  # dtype / type / sharding differences
    note: str | None = None

    @property
    def main(self) -> Entry:
        """a's entry, or b's for an entry in b only."""
        main = self.a or self.b
        assert main is not None, "match_sides makes no match without an entry"
        return main

    @property
    def pair(self) -> tuple[Entry, Entry]:
        """Both entries of a matched pair: a match whose values are compared (``status`` None, as
        match_sides leaves only a pair), or that has values."""
        a, b = self.a, self.b
        assert a is not None and b is not None, "a one-sided match has no pair"
        return a, b


def match_sides(a: Side, b: Side, map: Any = None) -> list[Match]:
    rename = renamer(map)
    a_keys = {key_of(e.path): e for e in a.entries}
    b_keys: dict[str, Entry] = {}
    out: list[Match] = []
    for e in b.entries:
        try:
            key = rename(key_of(e.path))
        except TypeError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's map function: said in one line
            raise TypeError(
                f"compare: map({key_of(e.path)!r}) raised {type(err).__name__}: {first_line(str(err), 200)}"
            ) from None
        if key is None:
            out.append(Match(None, e, "unexpected", note="map= left it unmatched"))
        elif key in b_keys:
            out.append(
                Match(
                    None,
                    e,
                    "unexpected",
                    note=f"map= sends it to {key!r} as well as {b_keys[key].text}",
                )
            )
        else:
            b_keys[key] = e
    a_alias = {key_of(p): e for e in a.entries for p in e.aliases}
    b_alias = {rename(key_of(p)) or "": e for e in b.entries for p in e.aliases}
    for key, ea in a_keys.items():
        eb = b_keys.get(key)
        if eb is None:
            owner = b_alias.get(key)
            if owner is not None:
                out.append(
                    Match(
                        ea,
                        None,
                        "tied",
                        note=f"tied to {owner.text} in b only (a separate array in a)",
                    )
                )
            else:
                out.append(Match(ea, None, "missing"))
            continue
        out.append(_pair(ea, eb))
    for key, eb in b_keys.items():
        if key in a_keys:
            continue
        owner = a_alias.get(key)
        if owner is not None:
            out.append(Match(None, eb, "tied", note=f"tied to {owner.text} in a only (a separate array in b)"))
        else:
            out.append(Match(None, eb, "unexpected"))
    return out


def _pair(ea: Entry, eb: Entry) -> Match:
    m = Match(ea, eb)
    keys = [e for e in (ea, eb) if e.kind == "prng_key"]
    if len(keys) == 1:  # a key array beside its saved key data (a checkpoint holds uint32 data, not keys)
        other = eb if keys[0] is ea else ea
        if other.shape == keys[0].key_data_shape:
            m.note = "a PRNG key array beside its key data: the key data compared"
            return m
    if ea.shape is not None and eb.shape is not None and ea.shape != eb.shape:
        m.status = "shape"
        m.note = f"shape {ea.shape} in a, {eb.shape} in b"
        return m
    if ea.dtype is not None and eb.dtype is not None and ea.dtype != eb.dtype:
        m.mismatch.append(f"dtype {ea.dtype} vs {eb.dtype}")
    if ea.type is not None and eb.type is not None and ea.type != eb.type:
        m.mismatch.append(f"type {ea.type} vs {eb.type}")
    if (
        (ea.sharding or eb.sharding)
        and ea.kind != "checkpoint"
        and eb.kind != "checkpoint"
        and ea.sharding != eb.sharding
    ):
        m.mismatch.append(f"sharding {ea.sharding or 'one device'} vs {eb.sharding or 'one device'}")
    return m
