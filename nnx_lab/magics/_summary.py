"""``%nnx_summary MODEL ARGS...``: shapes, parameters, FLOPs and bytes of every module call."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.text import clip
from ._args import MagicsHost, check_name, check_option, evaluate_target, parse_line
from ._suggest import did_you_mean

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

_TYPED_SHAPE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\[([0-9,\s]*)\]$")


def parse_arg(shell: InteractiveShell, text: str) -> Any:
    """One ARG of the line: ``(8, 224, 224, 3)`` (float32) or ``bfloat16[8,224]`` as a
    ``jax.ShapeDtypeStruct``; anything else a Python expression in the user namespace."""
    import jax
    import jax.numpy as jnp

    text = text.strip()
    typed = _TYPED_SHAPE.match(text)
    if typed:
        dtype_name, dims = typed.groups()
        try:
            dtype = jnp.dtype(dtype_name)
        except TypeError:
            raise UsageError(
                f"ARG {clip(repr(text))}: {dtype_name!r} is not a dtype (float32, bfloat16, int32, ...)"
            ) from None
        return jax.ShapeDtypeStruct(tuple(int(d) for d in dims.replace(" ", "").split(",") if d), dtype)
    if text.startswith("("):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, tuple) and all(isinstance(d, int) and not isinstance(d, bool) for d in value):
            if any(d < 0 for d in value):
                raise UsageError(f"ARG {clip(repr(text))}: a shape's sizes are non-negative")
            return jax.ShapeDtypeStruct(value, jnp.float32)
    return evaluate_target(shell, text, what="ARG")


@magic_arguments()
@argument("model", help="a Python expression naming an nnx.Module (an nnx.eval_shape model too)")
@argument(
    "args",
    nargs="*",
    help="the call's arguments: names or expressions in the namespace, or shapes written "
    "(8, 224, 224, 3) (float32) or bfloat16[8,224,224,3]",
)
@argument("--method", default="__call__", help="the method to call (default __call__)")
@argument(
    "--depth",
    type=int,
    default=None,
    help="show module calls at most this deep (0: the model's row only)",
)
@argument(
    "--grad",
    action="store_true",
    help="also the backward pass (gradient w.r.t. the nnx.Param Variables)",
)
@argument(
    "--no-memory",
    action="store_true",
    help="skip XLA's memory analysis (it compiles the program once)",
)
@argument("--as", dest="name", default=None, help="also bind the Summary to this name")
def nnx_summary(self: MagicsHost, line: str) -> None:
    """Show what each module of MODEL takes, gives and costs for one call: inputs and outputs (shape,
    dtype, sharding), parameters per Variable type, FLOPs and bytes accessed (forward, and backward
    with --grad), output bytes; totals and XLA's peak memory at the top. One trace, no compile per module.

    Examples::

        %nnx_summary model x
        %nnx_summary model (8, 224, 224, 3) --depth 2
        %nnx_summary lm int32[4,1024] --method generate --as s
    """
    args = parse_line(nnx_summary, line)
    model = evaluate_target(self.shell, args.model, what="MODEL")
    values = [parse_arg(self.shell, text) for text in args.args]
    depth = None if args.depth is None else check_option(args.depth, "--depth", 0, 1_000, integer=True)
    name = check_name(args.name, shell=self.shell, target_text=args.model) if args.name else None
    from flax import nnx

    if isinstance(model, nnx.Module) and not callable(getattr(type(model), args.method, None)):
        methods = [n for n in dir(type(model)) if callable(getattr(type(model), n, None))]
        hint = did_you_mean(args.method, [n for n in methods if not n.startswith("_")] + ["__call__"])
        raise UsageError(f"--method {clip(args.method, 80)}: {type(model).__name__} has no such method{hint}")
    from ..core.summary import SummaryError, summary
    from ..core.text import first_line

    try:
        result = summary(
            model,
            *values,
            method=args.method,
            grad=args.grad,
            depth=depth,
            memory=not args.no_memory,
        )
    except SummaryError as e:
        raise UsageError(first_line(str(e), 600)) from None
    if name:
        self.shell.user_ns[name] = result
    from ..widgets.summary import display_summary

    display_summary(result)
