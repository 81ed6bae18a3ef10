"""IPython magics. User variables are read and written only through ``self.shell.user_ns``."""

from __future__ import annotations


from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .core._util import MAX_BINS, MAX_RATE, MAX_ROWS, clip, first_line, one_line


def evaluate_target(shell, expression: str, what: str = "TARGET"):
    """Evaluate a TARGET expression in the user namespace; a clear one-line error otherwise."""
    expression = expression.strip()
    if not expression:
        raise UsageError(f"missing {what}: give a model, a State or an expression naming one")
    try:
        return eval(expression, shell.user_ns)  # the user's own expression, in their namespace
    except NameError as e:
        raise UsageError(f"{what} {clip(repr(expression))}: {first_line(str(e))}") from None
    except Exception as e:
        raise UsageError(f"{what} {clip(repr(expression))} raised {one_line(e)}") from None


def check_option(value, option: str, low: float, high: float, **kwargs):
    """A numeric option in its bounds (``core._util.check_number``); else a one-line UsageError."""
    from .core._util import check_number

    try:
        return check_number(value, option, low, high, **kwargs)
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_name(name: str, what: str = "--as", shell=None, target_text: str | None = None) -> str:
    """``name`` if nnx_lab may bind it in the user namespace (see ``core._util.check_name``); else UsageError."""
    from .core._util import check_name as check

    namespace = getattr(shell, "user_ns", None)
    target = None
    if namespace is not None and target_text is not None and target_text.strip().isidentifier():
        target = namespace.get(target_text.strip())
    try:
        return check(name, what=what, namespace=namespace, target=target, target_text=target_text)
    except ValueError as e:
        raise UsageError(first_line(str(e))) from None


@magics_class
class NnxLabMagics(Magics):
    @magic_arguments()
    @argument("target", nargs="+", help="a Python expression: an nnx.Module, nnx.State, or nested dict of Variables")
    @argument("--no-stats", action="store_true", help="describe only; run nothing on the device")
    @argument("--as", dest="name", default=None, help="also bind the Snapshot to this name")
    @argument("--max-rows", type=int, default=200, help=f"rows shown in the table, 1..{MAX_ROWS} (default 200)")
    @line_magic
    def nnx_snapshot(self, line: str):
        """Show every Variable of TARGET with its shape, dtype, bytes, sharding and statistics.

        Examples::

            %nnx_snapshot model
            %nnx_snapshot model.blocks[0] --as snap
            %nnx_snapshot nnx.state(model, nnx.BatchStat) --no-stats
        """
        args = parse_argstring(self.nnx_snapshot, line)
        check_option(args.max_rows, "--max-rows", 1, MAX_ROWS, integer=True)
        obj = evaluate_target(self.shell, " ".join(args.target))
        name = check_name(args.name, shell=self.shell, target_text=" ".join(args.target)) if args.name else None
        from .core.snapshot import snapshot
        from .core.render import html_table

        try:
            snap = snapshot(obj, stats=not args.no_stats)
        except TypeError as e:
            raise UsageError(first_line(str(e))) from None
        if name:
            self.shell.user_ns[name] = snap
        display({"text/plain": snap.to_text(max_rows=args.max_rows),
                 "text/html": html_table(snap, max_rows=args.max_rows)}, raw=True)

    @magic_arguments()
    @argument("target", nargs="+", help="a Python expression naming a model (held by weak reference)")
    @argument("--rate", type=float, default=2.0, help=f"most refreshes per second, at most {MAX_RATE:g} (default 2)")
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
        name = check_name(args.name, shell=self.shell, target_text=" ".join(args.target)) if args.name else None
        check_option(args.rate, "--rate (refreshes per second)", 0, MAX_RATE, low_open=True)
        from .widgets.viewer import watch

        try:
            viewer = watch(obj, max_rate=args.rate, background=args.background, stats=not args.no_stats,
                           display=False)
        except TypeError as e:
            raise UsageError(first_line(str(e))) from None
        if name:
            self.shell.user_ns[name] = viewer
        display(viewer)

    @magic_arguments()
    @argument("target", help="a Python expression: the nnx.Module (or nnx.State) to split")
    @argument("filters", nargs="*", help="NNX filters, as Python expressions: nnx.Param, 'params', "
              "nnx.PathContains('lora'), ..., a function (path, value) -> bool; none means `...`")
    @argument("--as", dest="names", default=None,
              help="comma-separated names for the graphdef and each State, e.g. graphdef,params,rest")
    @argument("--merge-into", dest="merge_into", default=None,
              help="(cell) build a new model with nnx.merge and bind it to this name instead of updating TARGET")
    @argument("--overwrite", action="store_true", help="(cell) let --merge-into replace a name that is not a Module")
    @argument("--no-update", dest="no_update", action="store_true", help="(cell) do not merge back at all")
    @line_cell_magic
    def nnx_split(self, line: str, cell: str | None = None):
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
        from .split_magic import Split, check_round_trip, detach, run_body, signatures, split_expressions

        args = self.nnx_split.parser.parse_args(split_expressions(line))
        split = Split(self.shell, args)
        if cell is None:
            if args.merge_into or args.no_update or args.overwrite:
                raise UsageError("--merge-into, --overwrite and --no-update apply to the cell magic %%nnx_split")
            split.display()
            split.bind(split.split())
            return
        if args.merge_into and args.no_update:
            raise UsageError("choose one of --merge-into NAME and --no-update")
        if args.merge_into:
            check_name(args.merge_into, "--merge-into", shell=self.shell)
            existing = self.shell.user_ns.get(args.merge_into)
            from flax import nnx

            if existing is not None and not isinstance(existing, nnx.Module) and not args.overwrite:
                raise UsageError(f"--merge-into {args.merge_into}: that name holds a {type(existing).__name__}, "
                                 "not a Module; add --overwrite to replace it")
        split.display()
        graphdef, *states = split.split()
        states = [detach(state) for state in states]
        split.bind((graphdef, *states))
        before = {name: signatures(state) for name, state in zip(split.names[1:], states)}
        run_body(self.shell, cell)
        after = {name: self.shell.user_ns.get(name) for name in before}
        check_round_trip(before, after)
        from flax import nnx

        if args.no_update:
            return
        if args.merge_into:
            self.shell.user_ns[args.merge_into] = nnx.merge(graphdef, *after.values())
        else:
            nnx.update(split.target, *after.values())

    @magic_arguments()
    @argument("target", help="a Python expression naming an nnx.Module")
    @argument("mode", nargs="?", choices=("train", "eval"), help="switch the whole model in place (model.train() / model.eval())")
    @line_magic
    def nnx_mode(self, line: str):
        """Show the train/eval mode of every submodule, or switch it in place.

        Lists each submodule instance with set_view, its arguments and current values, and says
        whether the model is in train, eval or *mixed* mode (naming the modules that disagree).

        Examples::

            %nnx_mode model          # the summary, per instance
            %nnx_mode model eval     # model.eval(), then the summary
        """
        from .split_magic import split_expressions

        args = self.nnx_mode.parser.parse_args(split_expressions(line))
        model = evaluate_target(self.shell, args.target)
        from flax import nnx

        from .core.views import view_report

        if not isinstance(model, nnx.Module):
            raise UsageError(f"TARGET {args.target!r} is a {type(model).__name__}, not an nnx.Module")
        if args.mode:
            from .core.views import ViewError, set_mode

            try:
                set_mode(model, args.mode)
            except ViewError as e:
                raise UsageError(first_line(str(e))) from None
        print(view_report(model).to_text())

    @magic_arguments()
    @argument("target", help="a Python expression naming an nnx.Module")
    @argument("--as", dest="name", default=None,
              help="the name 'create view' binds nnx.view(...) to (default: TARGET_view)")
    @argument("--only", default=None, metavar="FILTER",
              help="list only some modules: a module path (blocks[0], blocks/0: that module and below) or an "
                   "NNX filter expression (nnx.Dropout, nnx.PathContains('decoder'), a function of (path, module))")
    @argument("--modes", action="store_true", help="only the train/eval switch and each instance's mode")
    @line_magic
    def nnx_view(self, line: str):
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
        from .split_magic import split_expressions

        args = self.nnx_view.parser.parse_args(split_expressions(line))
        model = evaluate_target(self.shell, args.target)
        from flax import nnx

        if not isinstance(model, nnx.Module):
            raise UsageError(f"TARGET {args.target!r} is a {type(model).__name__}, not an nnx.Module")
        if not args.modes:
            from .core import compat

            compat.require("nnx.view", "%nnx_view (the set_view options)")
        name = check_name(args.name, shell=self.shell, target_text=args.target) if args.name else None
        only = ...
        if args.only is not None:
            if args.modes:
                raise UsageError("--only lists a subset of modules for the options panel; --modes shows them all")
            from .core import compat
            from .core.graph import module_paths_text

            text = args.only.strip()  # a module path of the model as written, else a filter expression
            paths = {t for p, _ in compat.iter_modules(model) for t in module_paths_text(tuple(p))}
            only = text if text in paths else evaluate_target(self.shell, text, "--only")
        from .core.views import is_module_path
        from .widgets.views import ViewPanel

        try:
            only_code = None if only is ... or is_module_path(only) else args.only.strip()  # a path: spelled as a filter
            panel = ViewPanel(model, variant="modes" if args.modes else "views", only=only,
                              only_code=only_code, target=args.target.strip(), name=name,
                              namespace=self.shell.user_ns)
        except Exception as e:  # a filter that raises or is not a filter; else the panel's own error
            cause = f"--only {clip(repr(args.only))}: " if args.only is not None else f"{args.target.strip()}: "
            raise UsageError(cause + one_line(e)) from None
        display(panel)

    @magic_arguments()
    @argument("target", help="a Python expression naming the nnx.Module whose calls are captured")
    @argument("--types", default=None, metavar="T1,T2",
              help="Variable types to collect: Intermediate (default), Perturbation, nnx.X or your own")
    @argument("--methods", action="store_true", help="also record every method's and __call__'s output")
    @argument("--only", default=None, metavar="FILTER",
              help="a module path (blocks[0], blocks/0: that module and below) or an NNX filter "
                   "expression (nnx.Linear, nnx.PathContains('attn'), a function of (path, module))")
    @argument("--as", dest="name", default="captured", help="bind the captured State to this name (default captured)")
    @argument("--grads", default=None, metavar="LOSS_FN",
              help="name of a function LOSS_FN(model, *args) -> scalar: each call LOSS_FN(TARGET, ...) in "
                   "the body also takes the gradient at every perturb() point, bound to NAME_grads")
    @argument("--bins", type=int, default=16, help=f"histogram bins per captured array, 1..{MAX_BINS} (default 16)")
    @cell_magic
    def nnx_capture(self, line: str, cell: str):
        """Run the cell with every call of TARGET captured: what its modules sow, with statistics.

        Every call of TARGET in the body — directly, through a submodule, or through an nnx.jit
        function of it — is captured; afterwards NAME (default `captured`) holds an nnx.State keyed
        by module path and sow name (one tuple entry per call), and a report shows each captured
        array with shape, dtype, statistics and a histogram computed on the device. The model
        and its classes are exactly as before, also when the body raises or is interrupted.

        --grads LOSS_FN: LOSS_FN is a function of your namespace, loss_fn(model, *args) -> a
        scalar. While the body runs, each call LOSS_FN(TARGET, ...) runs on a copy of the model
        with flax's perturb recipe and returns the loss as usual; its forward values join the
        capture and the gradient of the loss at every `self.perturb(name, x)` point is shown
        beside them and bound to NAME_grads (of the last such call).

        Examples::

            %%nnx_capture model
            y = model(x)

            %%nnx_capture model --methods --only blocks[0] --as acts
            y = train_step(model, batch)        # an nnx.jit function: captured too

            %%nnx_capture model --types Intermediate,MyStat --grads loss_fn
            loss = loss_fn(model, x, y)
        """
        from .capture_magic import run_capture
        from .split_magic import split_expressions

        run_capture(self.shell, self.nnx_capture.parser.parse_args(split_expressions(line)), cell)
