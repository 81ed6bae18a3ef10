"""``%nnx_split`` / ``%%nnx_split``: split by filters, bind the pieces, (cell) work, merge back.

Kept apart from magics.py: it is the one magic with a body to run and a model to write back.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from IPython.core.error import UsageError

from .cell_body import run_cell_body
from .core._util import clip, first_line, one_line


def split_expressions(text: str) -> list[str]:
    """Split a magic line on whitespace outside brackets and strings.

    >>> split_expressions("model nnx.All(nnx.Param, nnx.PathContains('a b')) ... --as g,p,r")
    ['model', "nnx.All(nnx.Param, nnx.PathContains('a b'))", '...', '--as', 'g,p,r']
    """
    parts: list[str] = []
    current: list[str] = []
    depth, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 1
            elif text.startswith(quote, i):
                current.extend(quote[1:])
                i += len(quote) - 1
                quote = ""
        elif ch in "'\"":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            current.append(quote)
            i += len(quote) - 1
        elif ch in "([{":
            depth += 1
            current.append(ch)
        elif ch in ")]}":
            depth -= 1
            current.append(ch)
        elif ch.isspace() and depth <= 0:
            if current:
                parts.append("".join(current))
                current = []
        else:
            current.append(ch)
        i += 1
    if quote or depth > 0:
        raise UsageError(f"unbalanced {'quote' if quote else 'bracket'} in: {text.strip()}")
    if current:
        parts.append("".join(current))
    return parts


def parse_names(spec: str, count: int, shell: Any = None, target_text: str | None = None) -> list[str]:
    from .magics import check_name

    names = [n.strip() for n in spec.split(",")]
    if len(names) != count:
        raise UsageError(f"--as gives {len(names)} names for {count} results (graphdef and one State per filter)")
    for name in names:
        check_name(name, shell=shell, target_text=target_text)
    if len(set(names)) != len(names):
        raise UsageError(f"--as: names repeat: {spec}")
    return names


class Split:
    """One parsed ``%nnx_split`` invocation: target, filters, report, names."""

    def __init__(self, shell: Any, args: Any):
        from .core.split import SplitError, split_report
        from .magics import evaluate_target

        self.shell = shell
        self.target_text = args.target
        self.target = evaluate_target(shell, args.target)
        if not splittable(self.target):
            raise UsageError(f"TARGET {clip(repr(args.target))} is a {type(self.target).__name__}: nnx.split takes "
                             "an nnx.Module, nnx.State, nnx.Optimizer, nnx.Rngs or a dict/list of Variables or arrays")
        self.filter_texts = list(args.filters)
        self.filters = []
        for i, text in enumerate(self.filter_texts):
            try:
                self.filters.append(eval(text, shell.user_ns))  # the user's expression, in their namespace
            except Exception as e:
                raise UsageError(f"filter {i + 1} `{clip(text)}` raised {one_line(e)}") from None
        try:
            self.report = split_report(self.target, *self.filters, labels=self.filter_texts or None)
        except SplitError as e:
            raise UsageError(first_line(str(e))) from None
        count = 1 + len(self.report.filters)
        if args.names:
            self.names = parse_names(args.names, count, shell, args.target)
        else:
            self.names = ["graphdef", *(f.name for f in self.report.filters)]

    def display(self) -> None:
        from IPython.display import display

        from .widgets.split import SplitReportView

        display(SplitReportView(self.report, target=self.target_text, names=self.names))

    def split(self) -> tuple:
        from flax import nnx

        if not self.report.exhaustive:
            raise UsageError(self.report.problems()[-1])
        return nnx.split(self.target, *(self.filters or [...]))

    def bind(self, pieces: tuple) -> None:
        for name, piece in zip(self.names, pieces):
            self.shell.user_ns[name] = piece


def run_body(shell: Any, body: str) -> None:
    """Run the cell body in the user namespace as a cell (its last expression is displayed);
    a failure becomes one UsageError line."""
    try:
        run_cell_body(shell, body)
    except Exception as e:
        frames = list(traceback.walk_tb(sys.exc_info()[2]))
        # The frame after run_cell_body's own is the body's: its file name marks the body's lines.
        names = [f.f_code.co_filename for f, _ in frames]
        codes = [f.f_code for f, _ in frames]
        body_file = names[codes.index(run_cell_body.__code__) + 1] if run_cell_body.__code__ in codes[:-1] else None
        lines = [lineno for (f, lineno), name in zip(frames, names) if body_file is not None and name == body_file]
        if isinstance(e, SyntaxError) and e.lineno is not None:
            lines = [e.lineno]
        where = f" (cell line {lines[-1]})" if lines else ""
        raise UsageError(f"the cell body raised {one_line(e)}{where}; the model is unchanged") from None


def detach(state: Any) -> Any:
    """A State with fresh Variable objects around the same (immutable) arrays.

    ``nnx.split`` hands out the model's own Variables; the body gets these instead, so an
    in-place edit in a body that later fails cannot reach the model. No array is copied.
    """
    import jax

    return jax.tree.map(lambda x: x, state)


def splittable(obj: Any) -> bool:
    """Whether ``nnx.split`` takes ``obj``: any flax graph node (Module, State, Optimizer, Rngs, ...)
    or a plain dict/list/tuple pytree (a Linen variables dict)."""
    from collections.abc import Mapping

    from flax.nnx import graph

    return graph.is_graph_node(obj) or isinstance(obj, (Mapping, list, tuple))


def signatures(state: Any) -> dict:
    """path -> (shape, dtype) of every leaf, taken before the body runs."""
    from flax import nnx

    return {path: _signature(_value(v)) for path, v in nnx.to_flat_state(state)}


def _signature(value: Any) -> tuple:
    """(shape, dtype) of an array; a string or object array (a vocabulary) or a Python number has
    a dtype too; anything else is recorded by its type, and carried through untouched."""
    import numpy as np

    dtype = getattr(value, "dtype", None)
    if dtype is None and isinstance(value, (bool, int, float, complex)):
        dtype = type(value).__name__
    if dtype is None:
        return (), type(value).__name__
    return tuple(int(d) for d in np.shape(value)), str(dtype)


def check_round_trip(before: dict[str, dict], after: dict[str, Any]) -> None:
    """Every State still a State with the same paths, shapes and dtypes and live arrays; else one
    line naming what changed. ``before`` maps each name to :func:`signatures` of its State."""
    import jax
    from flax import nnx

    from .core.graph import path_text

    problems = []
    for name, old_flat in before.items():
        new = after[name]
        if not isinstance(new, nnx.State):
            problems.append(f"`{name}` is now a {type(new).__name__}, not an nnx.State")
            continue
        new_flat = dict(nnx.to_flat_state(new))
        dropped = [path_text(p) for p in old_flat if p not in new_flat]
        added = [path_text(p) for p in new_flat if p not in old_flat]
        if dropped:
            problems.append(f"`{name}` lost {', '.join(dropped[:4])}{' …' if len(dropped) > 4 else ''}")
        if added:
            problems.append(f"`{name}` gained {', '.join(added[:4])}{' …' if len(added) > 4 else ''}")
        for path, old_sig in old_flat.items():
            if path not in new_flat:
                continue
            value = _value(new_flat[path])
            if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer) and value.is_deleted():
                problems.append(f"`{name}` {path_text(path)} was deleted (a donated buffer?)")
                continue
            new_sig = _signature(value)
            if new_sig != old_sig:
                problems.append(f"`{name}` {path_text(path)} changed from {old_sig[0]} {old_sig[1]} "
                                f"to {new_sig[0]} {new_sig[1]}")
    if problems:
        shown = "; ".join(problems[:6]) + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        if any("was deleted" in p for p in problems):
            # The arrays are shared with the model (only Variables were detached): say so plainly.
            raise UsageError(f"cannot merge back: {shown}; the model shares those buffers, so they are "
                             "deleted in the model too (do not donate split States)")
        raise UsageError(f"cannot merge back, the model is unchanged: {shown}")


def _value(v: Any) -> Any:
    from flax import nnx

    from .core import compat

    return compat.get_value(v) if isinstance(v, nnx.Variable) else v
