"""``%nnx_split`` / ``%%nnx_split``: split by filters, bind the pieces, (cell) work, merge back."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.text import clip, first_line, one_line
from ._args import MagicsHost, check_name, evaluate_target, parse_line, run_body
from ._suggest import expression_hint

if TYPE_CHECKING:
    from flax import nnx
    from IPython.core.interactiveshell import InteractiveShell

_log = logging.getLogger("nnx_lab")


@magic_arguments()
@argument("target", help="a Python expression: the nnx.Module (or nnx.State) to split")
@argument(
    "filters",
    nargs="*",
    help="NNX filters, as Python expressions: nnx.Param, 'params', "
    "nnx.PathContains('lora'), ..., a function (path, value) -> bool; none means `...`",
)
@argument(
    "--as",
    dest="names",
    default=None,
    help="comma-separated names for the graphdef and each State, e.g. graphdef,params,rest",
)
@argument(
    "--merge-into",
    dest="merge_into",
    default=None,
    help="(cell) build a new model with nnx.merge and bind it to this name instead of updating TARGET",
)
@argument("--overwrite", action="store_true", help="(cell) let --merge-into replace a name that is not a Module")
@argument("--no-update", dest="no_update", action="store_true", help="(cell) do not merge back at all")
def nnx_split(self: MagicsHost, line: str, cell: str | None = None) -> None:
    """Split a model by NNX filters and see exactly which Variables each filter took.

    As a line magic, binds the GraphDef and one State per filter (default names: graphdef,
    and one derived from each filter: param, batch_stat, rest for `...`) and shows the split
    report: what each filter took, filters that took nothing, Variables shadowed by an
    earlier filter, the remainder when the filters are not exhaustive.

    As a cell magic, the body runs with those names bound, in functional style; afterwards the
    (possibly rebound) States are checked (same paths, shapes, dtypes) and merged back:
    nnx.update(TARGET, ...) in place by default, or nnx.merge into --merge-into NAME. If the
    body raises or a check fails, the model is left unchanged.

    Examples::

        %nnx_split model nnx.Param nnx.BatchStat ...
        %nnx_split model nnx.Param ... --as graphdef,params,rest

        %%nnx_split model nnx.Param ...
        param = jax.tree.map(lambda p: p * 0.5, param)

        %%nnx_split model nnx.Param ... --merge-into half
        param = jax.tree.map(lambda p: p * 0.5, param)
    """
    args = parse_line(nnx_split, line)
    shell = self.shell
    split = Split(shell, args)
    if cell is None:
        if args.merge_into or args.no_update or args.overwrite:
            raise UsageError("--merge-into, --overwrite and --no-update apply to the cell magic %%nnx_split")
        split.display()
        split.bind(split.split())
        return
    if args.merge_into and args.no_update:
        raise UsageError("choose one of --merge-into NAME and --no-update")
    from flax import nnx

    if args.merge_into:
        check_name(args.merge_into, "--merge-into", shell=shell)
        existing = shell.user_ns.get(args.merge_into)
        if existing is not None and not isinstance(existing, nnx.Module) and not args.overwrite:
            raise UsageError(
                f"--merge-into {args.merge_into}: that name holds a {type(existing).__name__}, "
                "not a Module; add --overwrite to replace it"
            )
    split.display()
    graphdef, *states = split.split()
    states = [detach(state) for state in states]
    split.bind((graphdef, *states))
    before = {name: signatures(state) for name, state in zip(split.names[1:], states)}
    run_body(shell, cell)
    after = {name: shell.user_ns.get(name) for name in before}
    check_round_trip(before, after)
    if args.no_update:
        return
    if args.merge_into:
        shell.user_ns[args.merge_into] = nnx.merge(graphdef, *after.values())
    else:
        nnx.update(split.target, *after.values())


def parse_names(
    spec: str, count: int, shell: InteractiveShell | None = None, target_text: str | None = None
) -> list[str]:
    """``--as a,b,c``: one name per result, each one nnx_lab may bind, none repeated."""
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

    def __init__(self, shell: InteractiveShell, args: argparse.Namespace):
        from ..core.split import SplitError, split_report

        self.shell = shell
        self.target_text = args.target
        self.target = evaluate_target(shell, args.target)
        if not splittable(self.target):
            raise UsageError(
                f"TARGET {clip(repr(args.target))} is a {type(self.target).__name__}: nnx.split takes "
                "an nnx.Module, nnx.State, nnx.Optimizer, nnx.Rngs or a dict/list of Variables or arrays"
            )
        self.filter_texts = list(args.filters)
        self.filters = []
        for i, text in enumerate(self.filter_texts):
            try:
                self.filters.append(eval(text, shell.user_ns))  # the user's expression, in their namespace
            except Exception as e:  # noqa: BLE001 - boundary: the user's expression may raise anything; one line
                _log.debug("nnx_lab: filter %d raised", i + 1, exc_info=True)
                hint = expression_hint(e, shell.user_ns)
                raise UsageError(f"filter {i + 1} `{clip(text)}` raised {one_line(e)}{hint}") from None
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

        from ..widgets.split import SplitReportView

        display(SplitReportView(self.report, target=self.target_text, names=self.names))

    def split(self) -> tuple:
        from flax import nnx

        if not self.report.exhaustive:
            raise UsageError(self.report.problems()[-1])
        return nnx.split(self.target, *(self.filters or [...]))

    def bind(self, pieces: tuple) -> None:
        for name, piece in zip(self.names, pieces):
            self.shell.user_ns[name] = piece


def detach(state: nnx.State) -> nnx.State:
    """A State with fresh Variable objects around the same (immutable) arrays.

    ``nnx.split`` hands out the model's own Variables; the body gets these instead, so an
    in-place edit in a body that later fails cannot reach the model. No array is copied.
    """
    import jax

    return jax.tree.map(lambda x: x, state)


def splittable(obj: object) -> bool:
    """Whether ``nnx.split`` takes ``obj``: any flax graph node (Module, State, Optimizer, Rngs, ...)
    or a plain dict/list/tuple pytree (a Linen variables dict)."""
    from collections.abc import Mapping

    from flax.nnx import graph

    return graph.is_graph_node(obj) or isinstance(obj, (Mapping, list, tuple))


def signatures(state: nnx.State) -> dict:
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
    from jax.core import Tracer

    from ..core.graph import path_text

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
            if isinstance(value, jax.Array) and not isinstance(value, Tracer) and value.is_deleted():
                problems.append(f"`{name}` {path_text(path)} was deleted (a donated buffer?)")
                continue
            new_sig = _signature(value)
            if new_sig != old_sig:
                problems.append(
                    f"`{name}` {path_text(path)} changed from {old_sig[0]} {old_sig[1]} to {new_sig[0]} {new_sig[1]}"
                )
    if problems:
        shown = "; ".join(problems[:6]) + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        if any("was deleted" in p for p in problems):
            # The arrays are shared with the model (only Variables were detached): say so plainly.
            raise UsageError(
                f"cannot merge back: {shown}; the model shares those buffers, so they are "
                "deleted in the model too (do not donate split States)"
            )
        raise UsageError(f"cannot merge back, the model is unchanged: {shown}")


def _value(v: Any) -> Any:
    from flax import nnx

    from ..core import compat

    return compat.get_value(v) if isinstance(v, nnx.Variable) else v
