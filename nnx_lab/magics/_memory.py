"""``%nnx_memory [NAME ...] [--device N] [--top K]``: who holds each device's memory (``nnx_lab.memory()``)."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from ..core.checks import MAX_ROWS
from ..core.text import clip
from ._args import MagicsHost, check_option, parse_line


@magic_arguments()
@argument("names", nargs="*", metavar="NAME", help="show only these holders (a name, Out[12], (unreached))")
@argument("--device", type=int, default=None, help="show only the device of this id (jax.devices()[N].id)")
@argument("--top", type=int, default=10, help="the biggest holders shown (default 10)")
def nnx_memory(self: MagicsHost, line: str) -> None:
    """Every live jax array on each device, under the name that holds it (a model by Variable type,
    an optimizer's state, a pytree, IPython's output cache, or "(unreached)"), the per-device total
    against memory_stats(), and the statements that would free the most (nothing is freed).

    Examples::

        %nnx_memory
        %nnx_memory model grads --top 3
        %nnx_memory --device 1
    """
    args = parse_line(nnx_memory, line)
    top = check_option(args.top, "--top", 1, MAX_ROWS, integer=True)
    from ..core.memory import memory

    ledger = memory(namespace=self.shell.user_ns)
    if args.device is not None and args.device not in {d.id for d in ledger.devices}:
        ids = ", ".join(str(d.id) for d in ledger.devices) or "none"
        raise UsageError(f"--device {args.device}: no live array is on that device (devices with arrays: {ids})")
    names = None
    if args.names:
        known = {r.holder for r in ledger.rows}
        unknown = [n for n in args.names if n not in known]
        if unknown:
            raise UsageError(
                f"{clip(unknown[0], 80)!s} holds no live array (holders: {clip(', '.join(sorted(known)), 200)})"
            )
        names = args.names
    shown = ledger.select(names, device=args.device, top=top)
    from ..widgets.memory import MemoryView, widgets_work

    if widgets_work():  # a Jupyter kernel: the interactive tree (its static copies for a saved notebook)
        display(MemoryView(shown))
    else:
        display({"text/plain": shown.to_text(), "text/html": shown._repr_html_()}, raw=True)
