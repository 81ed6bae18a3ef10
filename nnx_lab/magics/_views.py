"""``%nnx_mode`` (train/eval per submodule, or switch it) and ``%nnx_view`` (the set_view panel)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from ..core.text import clip, first_line, one_line
from ._args import MagicsHost, check_name, evaluate_target, parse_line, parse_only
from ._suggest import check_choice

if TYPE_CHECKING:
    from flax import nnx
    from IPython.core.interactiveshell import InteractiveShell

#: what ``%nnx_mode TARGET MODE`` switches to
MODES = ("train", "eval")

_log = logging.getLogger("nnx_lab")


def module_target(shell: InteractiveShell, text: str) -> nnx.Module:
    """TARGET evaluated, and refused unless it is an nnx.Module."""
    model = evaluate_target(shell, text)
    from flax import nnx

    if not isinstance(model, nnx.Module):
        raise UsageError(f"TARGET {text!r} is a {type(model).__name__}, not an nnx.Module")
    return model


@magic_arguments()
@argument("target", help="a Python expression naming an nnx.Module")
@argument(
    "mode",
    nargs="?",
    metavar="{train,eval}",
    help="switch the whole model in place (model.train() / model.eval())",
)
def nnx_mode(self: MagicsHost, line: str) -> None:
    """Show the train/eval mode of every submodule, or switch it in place.

    Lists each submodule instance with set_view, its arguments and current values, and says
    whether the model is in train, eval or *mixed* mode (naming the modules that disagree).

    Examples::

        %nnx_mode model          # the summary, per instance
        %nnx_mode model eval     # model.eval(), then the summary
    """
    args = parse_line(nnx_mode, line)
    check_choice(args.mode, MODES, "mode")
    model = module_target(self.shell, args.target)
    from ..core.views import view_report

    if args.mode:
        from ..core.views import ViewError, set_mode

        try:
            set_mode(model, args.mode)
        except ViewError as e:
            raise UsageError(first_line(str(e))) from None
    print(view_report(model).to_text())


@magic_arguments()
@argument("target", help="a Python expression naming an nnx.Module")
@argument(
    "--as", dest="name", default=None, help="the name 'create view' binds nnx.view(...) to (default: TARGET_view)"
)
@argument(
    "--only",
    default=None,
    metavar="FILTER",
    help="list only some modules: a module path (blocks[0], blocks/0: that module and below) or an "
    "NNX filter expression (nnx.Dropout, nnx.PathContains('decoder'), a function of (path, module))",
)
@argument("--modes", action="store_true", help="only the train/eval switch and each instance's mode")
def nnx_view(self: MagicsHost, line: str) -> None:
    """Show the set_view options of every submodule as controls.

    "create view" binds ``nnx.view(TARGET, only=..., **options)`` to --as NAME (arrays shared
    with TARGET) and shows that exact line; "apply in place" runs
    ``TARGET.set_attributes(...)``; train / eval call ``TARGET.train()`` / ``TARGET.eval()``.
    Clicks made while a cell runs are applied at the next ``panel.tick()`` / ``track()`` step
    (or a viewer's), or when the cell ends.

    Examples::

        %nnx_view model --as eval_model
        %nnx_view model --only nnx.Dropout
        %nnx_view model --modes
    """
    args = parse_line(nnx_view, line)
    model = module_target(self.shell, args.target)
    if not args.modes:
        from ..core import compat

        compat.require("nnx.view", "%nnx_view (the set_view options)")
    name = check_name(args.name, shell=self.shell, target_text=args.target) if args.name else None
    if args.only is not None and args.modes:
        raise UsageError("--only lists a subset of modules for the options panel; --modes shows them all")
    only = parse_only(args.only, model, self.shell.user_ns)
    from ..core.graph import is_module_path
    from ..widgets.views import ViewPanel

    try:
        only_code = (
            None if only is ... or args.only is None or is_module_path(only) else args.only.strip()
        )  # a path: spelled as a filter
        panel = ViewPanel(
            model,
            variant="modes" if args.modes else "views",
            only=only,
            only_code=only_code,
            target=args.target.strip(),
            name=name,
            namespace=self.shell.user_ns,
        )
    except Exception as e:  # noqa: BLE001 - boundary: the user's filter or target; else the panel's own error
        _log.debug("nnx_lab: the views panel not made", exc_info=True)
        cause = f"--only {clip(repr(args.only))}: " if args.only is not None else f"{args.target.strip()}: "
        raise UsageError(cause + one_line(e)) from None
    display(panel)
