""" "Did you mean ...?" for every magic: an unknown option, a misspelled choice (``%nnx_mode model
evel``), a misspelled name in an expression (``%nnx_watch modle``, ``model.blcks``), a loss
function, a Variable type, a method. Each is matched with :mod:`difflib` against what that magic
or namespace has, and said in the same one-line UsageError.
"""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Any, Iterable

from IPython.core.error import UsageError

from ..core.text import clip

#: how close a word must be to a candidate to be suggested (difflib's ratio)
CUTOFF = 0.6
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def close_matches(word: object, candidates: Iterable[object], n: int = 1) -> list[str]:
    """The candidates closest to ``word`` (case ignored), best first; ``[]`` when none is close.

    >>> close_matches("evel", ["train", "eval"]), close_matches("zzz", ["train", "eval"])
    (['eval'], [])
    """
    if not isinstance(word, str) or not word:
        return []
    by_key: dict[str, str] = {}
    for c in candidates:
        if isinstance(c, str) and c and c != word:
            by_key.setdefault(c.lower(), c)
    keys = difflib.get_close_matches(word.lower()[:200], list(by_key), n=n, cutoff=CUTOFF)
    return [by_key[k] for k in keys]


def did_you_mean(word: object, candidates: Iterable[object]) -> str:
    """``"; did you mean X?"`` for the candidate closest to ``word``, or ``""``."""
    found = close_matches(word, candidates)
    return f"; did you mean {found[0]}?" if found else ""


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [s for action in parser._actions for s in action.option_strings if s not in ("-h", "--help")]


def unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """The one line for arguments ``parser`` did not take: each unknown option's closest option of
    this magic (``--gard``: did you mean ``--grads``?), else the options it has.

    >>> p = argparse.ArgumentParser(prog="nnx_x")
    >>> _ = p.add_argument("--grads"); _ = p.add_argument("--bins")
    >>> unrecognized(p, ["--gard", "x"])
    'unrecognized arguments: --gard x; did you mean --grads?'
    >>> unrecognized(p, ["--zzz"])
    'unrecognized arguments: --zzz; %nnx_x takes --grads, --bins'
    """
    options = _option_strings(parser)
    unknown = [e.split("=", 1)[0] for e in extras if e.startswith("-") and not _NEGATIVE_NUMBER.match(e)]
    hints = []
    for word in unknown:
        # Compared without the dashes, so '--as' is not close to everything that starts with '--'.
        found = close_matches(word.lstrip("-"), [o.lstrip("-") for o in options])
        if found:
            match = next(o for o in options if o.lstrip("-") == found[0])
            hints.append(f"{match} for {clip(word, 40)}" if len(unknown) > 1 else match)
    line = "unrecognized arguments: " + clip(" ".join(extras), 200)
    if hints:
        return f"{line}; did you mean {', '.join(hints)}?"
    if unknown and options:
        return f"{line}; %{parser.prog.lstrip('%')} takes {', '.join(options)}"
    return line


def check_choice(value: str | None, choices: Iterable[str], what: str) -> str | None:
    """``value`` if it is one of ``choices`` (or None); else a one-line UsageError with the closest.

    >>> check_choice("evel", ("train", "eval"), "mode")
    Traceback (most recent call last):
    IPython.core.error.UsageError: mode 'evel' is not one of train, eval; did you mean eval?
    """
    choices = tuple(choices)
    if value is None or value in choices:
        return value
    raise UsageError(f"{what} {clip(repr(value), 80)} is not one of {', '.join(choices)}{did_you_mean(value, choices)}")


def _public(names: Iterable[Any]) -> list[str]:
    return [n for n in names if isinstance(n, str) and not n.startswith("_")]


def expression_hint(error: BaseException, namespace: dict | None) -> str:
    """For an expression that raised NameError or AttributeError: ``"; did you mean X?"`` with the
    closest name of the namespace (or builtins), or attribute of the object; ``""`` otherwise."""
    if isinstance(error, NameError) and not isinstance(error, UnboundLocalError):
        name = getattr(error, "name", None)
        if name is None:
            found = re.search(r"name '([^']+)' is not defined", str(error))
            name = found.group(1) if found else None
        import builtins

        return did_you_mean(name, _public([*(namespace or {}), *vars(builtins)]))
    if isinstance(error, AttributeError):
        name, obj = getattr(error, "name", None), getattr(error, "obj", None)
        if name is None or obj is None:
            return ""
        try:
            attributes = dir(obj)
        except Exception:  # noqa: BLE001 - a user object's __dir__ may raise anything: no hint then
            return ""
        return did_you_mean(name, _public(attributes))
    return ""


def layers_hint(options: list[str] | None, obj: Any) -> str:
    """For ``--layers PREFIX=AXIS`` whose PREFIX is no path of ``obj``: ``"; did you mean blocks?"``
    with the closest path (a module's or a Variable's) of ``obj``; ``""`` otherwise. Walks ``obj``
    (descriptions only, nothing on the device); only called once a layer option was refused."""
    from ..core.graph import path_text
    from ..core.snapshot import snapshot

    prefixes = [option.split("=", 1)[0].strip() for option in options or () if isinstance(option, str)]
    if not prefixes:
        return ""
    try:
        rows = snapshot(obj, stats=False).rows
    except Exception:  # noqa: BLE001 - boundary: the layer error is said as it is, without a hint
        return ""
    texts = {path_text(row.path[:k]) for row in rows for k in range(1, len(row.path) + 1)}
    for prefix in prefixes:
        if not any(t == prefix or t.startswith((prefix + ".", prefix + "[")) for t in texts):
            hint = did_you_mean(prefix, texts)
            if hint:
                return hint
    return ""
