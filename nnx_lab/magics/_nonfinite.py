"""``%%nnx_nonfinite MODEL``: run the cell under :func:`nnx_lab.find_nonfinite` and show its report.

The cell is the forward pass or the loss: its last line is an expression (``loss_fn(model, batch)``,
``model(x)``). It runs as ``fn(MODEL)``: eagerly, on a copy of the model, in a scratch copy of the
namespace, so nothing it assigns is kept and the model stays bit-identical.
"""

from __future__ import annotations

import argparse
import ast
from typing import TYPE_CHECKING, Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.checks import is_python_name
from ..core.text import a_kind, first_line
from ._args import MagicsHost, check_name, evaluate_target, parse_line
from ._suggest import did_you_mean

if TYPE_CHECKING:
    from flax import nnx
    from IPython.core.interactiveshell import InteractiveShell

    from ..core.nonfinite import NonfiniteReport


@magic_arguments()
@argument("target", help="the name of the nnx.Module the cell calls (it runs on a copy)")
@argument("--as", dest="name", default=None, help="also bind the NonfiniteReport to this name")
def nnx_nonfinite(self: MagicsHost, line: str, cell: str) -> None:
    """Run the cell's forward pass or loss once more, eagerly, and name the module call (and the
    primitive in it) that first made NaN or Inf: forward, backward, or already in the input.

    The cell's last line is an expression: the forward output, or a scalar loss (then the
    backward pass is searched too). It runs as ``nnx_lab.find_nonfinite(fn, MODEL)`` with ``fn``
    running the cell on a copy of MODEL, in a scratch copy of the namespace: nothing the cell
    assigns is kept, and MODEL (Variables, RNG counts, statistics) is bit-identical afterwards.
    Pass MODEL to your functions in the cell (``loss_fn(model, batch)``): a function reading the
    global ``model`` would run the original, unrecorded.

    Examples::

        %%nnx_nonfinite model
        loss_fn(model, batch)

        %%nnx_nonfinite model --as report
        model(x)
    """
    args = parse_line(nnx_nonfinite, line)
    report = run_nonfinite(self.shell, args, cell)
    show(report)


def run_nonfinite(shell: InteractiveShell, args: argparse.Namespace, body: str) -> NonfiniteReport:
    """Everything ``%%nnx_nonfinite`` does after parsing; the NonfiniteReport. Bad input raises
    UsageError before anything runs."""
    from flax import nnx

    target = args.target.strip()
    model = evaluate_target(shell, target, "MODEL")  # a missing name: one line, with a did-you-mean
    if not isinstance(model, nnx.Module):
        raise UsageError(f"MODEL {target!r} is {a_kind(type(model).__name__)}, not an nnx.Module")
    if not is_python_name(target):
        modules = [n for n, v in shell.user_ns.items() if isinstance(v, nnx.Module) and not n.startswith("_")]
        raise UsageError(f"MODEL must be a name the cell uses, got {target!r}{did_you_mean(target, modules)}")
    name = check_name(args.name, shell=shell, target_text=target) if args.name is not None else None
    fn = _cell_function(shell, target, body)
    from ..core.nonfinite import find_nonfinite

    try:
        report = find_nonfinite(fn, model)
    except (TypeError, ValueError) as e:
        if not str(e).startswith("find_nonfinite:"):
            raise  # the cell's own error
        raise UsageError("%%nnx_nonfinite" + first_line(str(e))[len("find_nonfinite") :]) from None
    if report.direction == "input":  # fn(MODEL) is the cell: its args[0] is the model the user named
        report.input_where = f"{target}'s Variables"

        def named(leaf: str) -> str:
            return target + leaf[len("args[0]") :] if leaf.startswith("args[0]") else leaf

        report.bad_leaves = [named(leaf) for leaf in report.bad_leaves]
        report.inputs = [{**st, "name": named(st["name"])} for st in report.inputs]
    if name is not None:
        shell.user_ns[name] = report
    return report


def _cell_function(shell: InteractiveShell, target: str, body: str) -> Callable[[nnx.Module], Any]:
    """``fn(model)``: the cell run in a scratch copy of the namespace with ``target`` bound to
    ``model``; the value of its last line. UsageError when that line is no expression."""
    source = shell.transform_cell(body) if hasattr(shell, "transform_cell") else body
    compiler = getattr(shell, "compile", None)
    filename = "<cell body>"
    if compiler is not None and hasattr(compiler, "cache"):
        filename = compiler.cache(source, getattr(shell, "execution_count", 0), raw_code=body)
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise UsageError(f"%%nnx_nonfinite: the cell does not parse: {first_line(str(e))}") from None
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):
        raise UsageError(
            "%%nnx_nonfinite: the cell's last line must be an expression: the forward output or the loss, "
            f"e.g. loss_fn({target}, batch)"
        )
    tree.body.pop()
    statements = compile(tree, filename, "exec")
    expression = compile(ast.fix_missing_locations(ast.Expression(last.value)), filename, "eval")

    def fn(model: nnx.Module) -> Any:
        scratch = dict(shell.user_global_ns)
        scratch.update(shell.user_ns)
        scratch[target] = model
        exec(statements, scratch)
        return eval(expression, scratch)

    return fn


def show(report: NonfiniteReport) -> None:
    """Display a NonfiniteReport: the widget in a kernel, its text and escaped HTML elsewhere."""
    from IPython.display import display

    from ..widgets import nonfinite  # noqa: F401 - registers the widget as a report's display in a kernel

    display(report)
