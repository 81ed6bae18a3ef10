"""IPython magics. User variables are read and written only through ``self.shell.user_ns``."""

from __future__ import annotations

import keyword

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display


def evaluate_target(shell, expression: str):
    """Evaluate a TARGET expression in the user namespace; a clear one-line error otherwise."""
    expression = expression.strip()
    if not expression:
        raise UsageError("missing TARGET: give a model, a State or an expression naming one")
    try:
        return eval(expression, shell.user_ns)  # the user's own expression, in their namespace
    except NameError as e:
        raise UsageError(f"TARGET {expression!r}: {e}") from None
    except Exception as e:
        raise UsageError(f"TARGET {expression!r} raised {type(e).__name__}: {e}") from None


def check_name(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"--as {name!r} is not a valid Python name")
    return name


@magics_class
class NnxLabMagics(Magics):
    @magic_arguments()
    @argument("target", nargs="+", help="a Python expression: an nnx.Module, nnx.State, or nested dict of Variables")
    @argument("--no-stats", action="store_true", help="describe only; run nothing on the device")
    @argument("--as", dest="name", default=None, help="also bind the Snapshot to this name")
    @argument("--max-rows", type=int, default=200, help="rows shown in the table (default 200)")
    @line_magic
    def nnx_snapshot(self, line: str):
        """Show every Variable of TARGET with its shape, dtype, bytes, sharding and statistics.

        Examples::

            %nnx_snapshot model
            %nnx_snapshot model.blocks[0] --as snap
            %nnx_snapshot nnx.state(model, nnx.BatchStat) --no-stats
        """
        args = parse_argstring(self.nnx_snapshot, line)
        obj = evaluate_target(self.shell, " ".join(args.target))
        name = check_name(args.name) if args.name else None
        from .core.snapshot import snapshot
        from .core.render import html_table

        try:
            snap = snapshot(obj, stats=not args.no_stats)
        except TypeError as e:
            raise UsageError(str(e)) from None
        if name:
            self.shell.user_ns[name] = snap
        display({"text/plain": snap.to_text(max_rows=args.max_rows),
                 "text/html": html_table(snap, max_rows=args.max_rows)}, raw=True)

    @magic_arguments()
    @argument("target", nargs="+", help="a Python expression naming a model (held by weak reference)")
    @argument("--rate", type=float, default=2.0, help="most refreshes per second (default 2)")
    @argument("--background", action="store_true", help="also refresh from a background thread")
    @argument("--no-stats", action="store_true", help="descriptions only; run nothing on the device")
    @argument("--as", dest="name", default=None, help="bind the viewer to this name (for viewer.track / tick)")
    @line_magic
    def nnx_watch(self, line: str):
        """Show a live viewer of TARGET that refreshes after every cell while it trains.

        Examples::

            %nnx_watch model --as viewer
            for batch in viewer.track(batches):
                train_step(model, optimizer, batch)
        """
        args = parse_argstring(self.nnx_watch, line)
        obj = evaluate_target(self.shell, " ".join(args.target))
        name = check_name(args.name) if args.name else None
        if args.rate <= 0:
            raise UsageError("--rate must be a positive number of refreshes per second")
        from .widgets.viewer import watch

        try:
            viewer = watch(obj, max_rate=args.rate, background=args.background, stats=not args.no_stats,
                           display=False)
        except TypeError as e:
            raise UsageError(str(e)) from None
        if name:
            self.shell.user_ns[name] = viewer
        display(viewer)
