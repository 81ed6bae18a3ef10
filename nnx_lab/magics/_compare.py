"""``%nnx_compare A B``: what differs between two models, states or checkpoints (``nnx_lab.compare``)."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from ..core.checks import MAX_ROWS
from ..core.text import first_line
from ._args import MagicsHost, check_name, check_option, evaluate_target, parse_line
from ._suggest import layers_hint


@magic_arguments()
@argument(
    "a",
    help="a Python expression: an nnx.Module, nnx.State, (graphdef, state) pair, Snapshot, or a "
    "checkpoint path as a string literal ('ckpt/step_10')",
)
@argument("b", help="the same kinds as A: compared against A (b loads into a?)")
@argument("--tol", type=float, default=0.0, help="an element is changed when |a-b| > TOL (default 0)")
@argument("--as", dest="name", default=None, help="also bind the Comparison to this name")
@argument(
    "--layers",
    action="append",
    default=None,
    metavar="PREFIX=AXIS",
    help="the layer axis of A's stacked Variables under PREFIX, e.g. blocks=0: one row per layer (repeatable)",
)
@argument(
    "--max-rows",
    type=int,
    default=None,
    help=f"rows shown in the table, 1..{MAX_ROWS} (default %%config NnxLabMagics.max_rows)",
)
def nnx_compare(self: MagicsHost, line: str) -> None:
    """Compare B against A: paths on one side only, shape/dtype/type/sharding mismatches, tied weights,
    and per Variable ||a-b||/||a||, max|a-b|, cosine, fraction changed, bit-identical (largest change first).

    Examples::

        %nnx_compare model restored
        %nnx_compare model 'checkpoints/step_100' --as cmp
        %nnx_compare before after --tol 1e-6
    """
    args = parse_line(nnx_compare, line)
    tol = check_option(args.tol, "--tol", 0, 1e30)
    max_rows = (
        self.max_rows if args.max_rows is None else check_option(args.max_rows, "--max-rows", 1, MAX_ROWS, integer=True)
    )
    a = evaluate_target(self.shell, args.a, "A")
    b = evaluate_target(self.shell, args.b, "B")
    name = check_name(args.name, shell=self.shell) if args.name else None
    from ..core.compare import compare
    from ..core.snapshot import parse_layer_option

    try:
        cmp = compare(a, b, tol=tol, layers=parse_layer_option(args.layers))
    except (TypeError, ValueError) as e:
        hint = layers_hint(args.layers, a) if args.layers and isinstance(e, ValueError) else ""
        raise UsageError(first_line(str(e)) + hint) from None
    if name:
        self.shell.user_ns[name] = cmp
    from ..widgets.compare import ComparisonView, widgets_work

    if widgets_work():  # a Jupyter kernel: the interactive table (its static copies for a saved notebook)
        display(ComparisonView(cmp, max_rows=max_rows))
    else:
        display({"text/plain": cmp.to_text(max_rows=max_rows), "text/html": cmp._repr_html_()}, raw=True)
