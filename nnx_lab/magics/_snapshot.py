"""``%nnx_snapshot`` (one static table) and ``%nnx_watch`` (a live viewer)."""

from __future__ import annotations

import contextlib
import os

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from ..core.checks import MAX_RATE, MAX_ROWS
from ..core.text import clip, first_line
from ._args import DEFAULT_MAX_ROWS, DEFAULT_RATE, MagicsHost, check_name, check_option, evaluate_target, parse_line
from ._suggest import layers_hint


@magic_arguments()
@argument("target", nargs="+", help="a Python expression: an nnx.Module, nnx.State, or nested dict of Variables")
@argument("--no-stats", action="store_true", help="describe only; run nothing on the device")
@argument("--as", dest="name", default=None, help="also bind the Snapshot to this name")
@argument(
    "--layers",
    action="append",
    default=None,
    metavar="PREFIX=AXIS",
    help="the layer axis of the stacked Variables under PREFIX (nnx.vmap/nnx.scan blocks), e.g. blocks=0: "
    "one row per layer (repeatable)",
)
@argument(
    "--max-rows",
    type=int,
    default=None,
    help=f"rows shown in the table, 1..{MAX_ROWS} (default {DEFAULT_MAX_ROWS}; %%config NnxLabMagics.max_rows)",
)
def nnx_snapshot(self: MagicsHost, line: str) -> None:
    """Show every Variable of TARGET with its shape, dtype, bytes, sharding and statistics.

    Examples::

        %nnx_snapshot model
        %nnx_snapshot model.blocks[0] --as snap
        %nnx_snapshot nnx.state(model, nnx.BatchStat) --no-stats
    """
    args = parse_line(nnx_snapshot, line)
    max_rows = (
        self.max_rows if args.max_rows is None else check_option(args.max_rows, "--max-rows", 1, MAX_ROWS, integer=True)
    )
    target = " ".join(args.target)
    obj = evaluate_target(self.shell, target)
    name = check_name(args.name, shell=self.shell, target_text=target) if args.name else None
    from ..core.render import html_table
    from ..core.snapshot import LayerError, parse_layer_option, snapshot

    try:
        snap = snapshot(obj, stats=not args.no_stats, layers=parse_layer_option(args.layers))
    except (TypeError, LayerError) as e:
        hint = layers_hint(args.layers, obj) if isinstance(e, LayerError) else ""
        raise UsageError(first_line(str(e)) + hint) from None
    if name:
        self.shell.user_ns[name] = snap
    display({"text/plain": snap.to_text(max_rows=max_rows), "text/html": html_table(snap, max_rows=max_rows)}, raw=True)


@magic_arguments()
@argument(
    "target",
    nargs="+",
    help="a model's name, followed at every refresh (model, trainer.model); or a Python "
    "expression, evaluated once and held by weak reference",
)
@argument(
    "--rate",
    type=float,
    default=None,
    help=f"most refreshes per second, at most {MAX_RATE:g} (default {DEFAULT_RATE:g}; %%config NnxLabMagics.rate)",
)
@argument("--background", action="store_true", help="also refresh from a background thread")
@argument("--no-stats", action="store_true", help="descriptions only; run nothing on the device")
@argument("--as", dest="name", default=None, help="bind the viewer to this name (for viewer.track / tick)")
@argument(
    "--pin",
    action="store_true",
    help="watch the object TARGET names now (by weak reference) instead of following the name",
)
@argument(
    "--layers",
    action="append",
    default=None,
    metavar="PREFIX=AXIS",
    help="the layer axis of the stacked Variables under PREFIX (nnx.vmap/nnx.scan blocks), e.g. blocks=0: "
    "one row per layer (repeatable)",
)
@argument(
    "--optimizer",
    default=None,
    metavar="NAME",
    help="an nnx.Optimizer of TARGET: its state (Adam's mu, nu...) beside each parameter and its step count; "
    "followed by name like TARGET (not with --pin)",
)
def nnx_watch(self: MagicsHost, line: str) -> None:
    """Show a live viewer of TARGET that refreshes after every cell while it trains.

    A TARGET that is a name (``model``, ``trainer.model``) is *followed*: looked up again at every
    refresh, so a functional loop that rebinds it (``model = nnx.merge(graphdef, state)``,
    ``model, opt_state = train_step(model, opt_state, batch)``) stays on screen; the status line
    says "following `model`", and while the name is missing or bound to something that is not a
    model it says so until the name holds a model again. ``--pin`` watches the object the name holds
    now instead (the viewer says "gone" once that object is garbage-collected). Any other expression
    (``model.blocks[0]``, ``nnx.state(model)``) is evaluated once and pinned. TARGET may also be the
    ``(graphdef, state, ...)`` tuple ``nnx.split`` returns, or a name bound to one.

    ``--optimizer NAME`` adds the optimizer's state beside each parameter (``watch(model,
    optimizer=opt)``). When TARGET is followed and NAME is a name, the optimizer is followed too (a
    functional loop rebinds both: ``model, optimizer = nnx.merge(graphdef, state)``) and the status
    says "following `model` and its optimizer `optimizer`"; with ``--pin``, or an expression, it is
    evaluated once and held by weak reference.

    Examples::

        %nnx_watch model --as viewer
        %nnx_watch model --layers blocks=0        # one row per layer of an nnx.vmap/nnx.scan stack
        %nnx_watch model --optimizer optimizer    # Adam's mu/nu beside each parameter
        %nnx_watch 'checkpoints/step_100'         # an Orbax checkpoint's static table
        for batch in viewer.track(batches):
            model, opt_state = train_step(model, opt_state, batch)
    """
    args = parse_line(nnx_watch, line)
    target = " ".join(args.target)
    obj = evaluate_target(self.shell, target)
    name = check_name(args.name, shell=self.shell, target_text=target) if args.name else None
    rate = (
        self.rate
        if args.rate is None
        else check_option(args.rate, "--rate (refreshes per second)", 0, MAX_RATE, low_open=True)
    )
    from ..core.checks import is_dotted_name
    from ..core.live import NameTarget, watch_target
    from ..core.snapshot import LayerError, parse_layer_option
    from ..core.text import a_kind
    from ..widgets.viewer import StateViewer

    if isinstance(obj, (str, os.PathLike)):  # '%nnx_watch "ckpt/step_10"': the checkpoint's static table
        from ..widgets.viewer_checkpoint import CheckpointViewer

        try:
            checkpoint = CheckpointViewer(obj, stats=not args.no_stats)
        except TypeError as e:
            raise UsageError(first_line(str(e))) from None
        if name:
            self.shell.user_ns[name] = checkpoint
        checkpoint.show()
        return

    follow = not args.pin and is_dotted_name(target.strip())
    optimizer = None
    # A followed name resolves to the value evaluated here until the viewer is shown: each expression
    # of the line is evaluated once (a property with side effects runs once), later refreshes follow it.
    held = contextlib.ExitStack()
    if args.optimizer is not None:
        optimizer = evaluate_target(self.shell, args.optimizer, "--optimizer")
        if not hasattr(optimizer, "opt_state"):
            raise UsageError(
                f"--optimizer {clip(args.optimizer.strip())} is {a_kind(type(optimizer).__name__)}, "
                "not an nnx.Optimizer (something with .opt_state)"
            )
        if follow and is_dotted_name(args.optimizer.strip()):  # rebound with the model: followed too
            evaluated, optimizer = optimizer, NameTarget(args.optimizer, self.shell.user_ns)
            held.enter_context(optimizer.held(evaluated))
    given = obj  # the evaluated TARGET (a followed name is replaced by its NameTarget below)
    with held:
        try:
            if follow:
                watch_target(obj)  # the name must hold a model now: a TypeError at once, not a status
                evaluated, obj = obj, NameTarget(target, self.shell.user_ns)
                held.enter_context(obj.held(evaluated))
            viewer = StateViewer(
                obj,
                max_rate=rate,
                background=args.background,
                stats=not args.no_stats,
                layers=parse_layer_option(args.layers),
                optimizer=optimizer,
            )
        except (TypeError, LayerError) as e:
            hint = layers_hint(args.layers, given) if isinstance(e, LayerError) else ""
            raise UsageError(first_line(str(e)) + hint) from None
        if name:
            self.shell.user_ns[name] = viewer
        viewer.show()
