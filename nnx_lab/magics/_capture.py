"""``%%nnx_capture``: run a cell with a model's sow/perturb (and method outputs) captured, then report.

Reading --types against the namespace, running the body under a
:class:`~nnx_lab.core.capture.Capture`, and the ``--grads`` loss wrapper.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.checks import MAX_BINS, is_python_name
from ..core.text import first_line
from ._args import (
    DEFAULT_BINS,
    MagicsHost,
    check_name,
    check_option,
    evaluate_target,
    parse_line,
    parse_only,
    run_cell_body,
)
from ._suggest import did_you_mean

if TYPE_CHECKING:
    from flax import nnx
    from IPython.core.interactiveshell import InteractiveShell

    from ..core.capture import Capture, CaptureReport

_log = logging.getLogger("nnx_lab")


@magic_arguments()
@argument("target", help="a Python expression naming the nnx.Module whose calls are captured")
@argument(
    "--types",
    default=None,
    metavar="T1,T2",
    help="Variable types to collect: Intermediate (default), Perturbation, nnx.X or your own",
)
@argument("--methods", action="store_true", help="also record every method's and __call__'s output")
@argument(
    "--only",
    default=None,
    metavar="FILTER",
    help="a module path (blocks[0], blocks/0: that module and below) or an NNX filter "
    "expression (nnx.Linear, nnx.PathContains('attn'), a function of (path, module))",
)
@argument("--as", dest="name", default="captured", help="bind the captured State to this name (default captured)")
@argument(
    "--grads",
    default=None,
    metavar="LOSS_FN",
    help="name of a function LOSS_FN(model, *args) -> scalar: each call LOSS_FN(TARGET, ...) in "
    "the body also takes the gradient at every perturb() point, bound to NAME_grads",
)
@argument(
    "--bins",
    type=int,
    default=None,
    help=f"histogram bins per captured array, 1..{MAX_BINS} (default {DEFAULT_BINS}; %%config NnxLabMagics.bins)",
)
@argument(
    "--layers",
    action="append",
    default=None,
    metavar="PREFIX=AXIS",
    help="values sown inside nnx.scan/nnx.vmap over layers under PREFIX are stacked on AXIS, e.g. "
    "blocks=0: one row per layer (repeatable)",
)
def nnx_capture(self: MagicsHost, line: str, cell: str) -> None:
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
    run_capture(self.shell, parse_line(nnx_capture, line), cell, bins=self.bins)


class LossSpy:
    """Stands in for ``--grads LOSS_FN`` while the body runs.

    A call ``LOSS_FN(TARGET, *args, **kwargs)`` runs :func:`intermediate_grads` (on a copy of the
    model: nothing in it changes), adds that call's forward values to the capture and returns
    the loss; any other call goes straight to the function.
    """

    def __init__(self, fn: Callable[..., Any], model: nnx.Module, capture: Capture, name: str):
        self.fn, self.model, self.capture, self.name = fn, model, capture, name
        self.calls = 0
        self.result = None
        self.note: str | None = None
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..core.capture import NoPerturbations, intermediate_grads

        if not args or args[0] is not self.model:
            return self.fn(*args, **kwargs)
        self.calls += 1
        cap = self.capture
        try:
            result = intermediate_grads(
                self.model,
                self.fn,
                *args[1:],
                types=cap.types,
                methods=cap.method_type or False,
                only=cap.only,
                **kwargs,
            )
        except NoPerturbations as e:
            self.note = f"--grads {self.name}: {first_line(str(e))}, so there are no gradients"
            return self.fn(*args, **kwargs)
        self.result = result
        cap.absorb(result.forward, result.seen_types)
        return result.loss

    def messages(self, target: str) -> list[str]:
        if self.note:
            return [self.note]
        if self.calls == 0:
            return [f"--grads {self.name}: the body never called {self.name}({target}, ...), so there are no gradients"]
        if self.calls > 1:
            return [f"{self.name} was called {self.calls} times; the gradients are those of the last call"]
        return []


def run_capture(shell: InteractiveShell, args: argparse.Namespace, body: str, bins: int) -> None:
    """Everything ``%%nnx_capture`` does after parsing, step by step; bad input raises UsageError
    before anything runs. ``bins``: the default when ``--bins`` is not given (``NnxLabMagics.bins``)."""
    from ..core import compat
    from ..core.capture import module_tree

    compat.require("nnx.capture", "%%nnx_capture")
    model = _target_model(shell, args.target)
    name = check_name(args.name, shell=shell, target_text=args.target)
    if args.bins is not None:
        bins = check_option(args.bins, "--bins", 1, MAX_BINS, integer=True)
    loss_fn = _loss_fn(shell, args.grads)
    args.layers = _layers(model, args.layers)
    capture = _make_capture(model, args, shell.user_ns)
    spy = LossSpy(loss_fn, model, capture, args.grads) if loss_fn is not None else None
    elapsed = _run_body(shell, body, capture, spy)
    report = _report(capture, spy, args, bins)
    _bind(shell, name, capture, spy)
    show(report, target=args.target.strip(), classes=dict(module_tree(model)), elapsed=elapsed)


def _target_model(shell: InteractiveShell, target: str) -> nnx.Module:
    """TARGET evaluated in the namespace; UsageError unless it is an nnx.Module."""
    from flax import nnx

    from ..core.text import a_kind

    model = evaluate_target(shell, target)
    if not isinstance(model, nnx.Module):
        raise UsageError(f"TARGET {target!r} is {a_kind(type(model).__name__)}, not an nnx.Module")
    return model


def _loss_fn(shell: InteractiveShell, grads: str | None) -> Callable[..., Any] | None:
    """The function ``--grads`` names (None without ``--grads``); UsageError unless it is one."""
    from ..core.text import a_kind

    if grads is None:
        return None
    if not is_python_name(grads):
        raise UsageError(f"--grads takes the name of a loss function, got {grads!r}")
    if grads not in shell.user_ns:
        functions = [n for n, v in shell.user_ns.items() if callable(v) and not isinstance(v, type)]
        raise UsageError(f"--grads {grads}: no such name in the namespace{did_you_mean(grads, functions)}")
    loss_fn = shell.user_ns[grads]
    if not callable(loss_fn):
        raise UsageError(f"--grads {grads} is {a_kind(type(loss_fn).__name__)}, not a function")
    return loss_fn


def _make_capture(model: nnx.Module, args: argparse.Namespace, namespace: dict[str, Any]) -> Capture:
    """The (not yet armed) Capture for ``--types``, ``--methods`` and ``--only``; UsageError on bad input."""
    from ..core.capture import Capture
    from ..core.graph import OnlyError

    only = parse_only(args.only, model, namespace)
    try:
        return Capture(model, types=_types(args.types, namespace), methods=args.methods, only=only)
    except OnlyError as e:
        raise UsageError(f"--only {args.only.strip()} {e.detail}; nothing was armed") from None
    except (TypeError, ValueError) as e:
        raise UsageError(first_line(str(e)) or type(e).__name__) from None


def _run_body(shell: InteractiveShell, body: str, capture: Capture, spy: LossSpy | None) -> float:
    """Run the cell body under ``capture``, with ``spy`` standing in for the loss function meanwhile;
    the seconds it took. An upstream limit becomes a UsageError; any other error gets a note."""
    from ..core.capture import CapturesInGraph, SownInScan

    try:
        if spy is not None:
            shell.user_ns[spy.name] = spy
        start = time.perf_counter()
        run_cell_body(shell, body, within=capture)
        return time.perf_counter() - start
    except (SownInScan, CapturesInGraph) as e:
        raise UsageError(f"{str(e)}; nothing was bound, the model is as before") from None
    except BaseException as e:  # re-raised with a note (Ctrl-C included)
        if hasattr(e, "add_note"):
            e.add_note("(%%nnx_capture: nothing was bound; the model and its classes are as before)")
        raise
    finally:
        if spy is not None and shell.user_ns.get(spy.name) is spy:
            shell.user_ns[spy.name] = spy.fn


def _layers(model: nnx.Module, options: list[str] | None) -> tuple:
    """The layer axes of the captured values: those of the model's stacked modules (flax's metadata;
    a value sown inside the scan over them is stacked the same way), then ``--layers PREFIX=AXIS``
    (which win). A malformed option is a UsageError before the body runs."""
    from ..core.snapshot import parse_layer_option, parse_layers, stacked_modules

    try:
        declared = parse_layers(parse_layer_option(options))
    except TypeError as e:
        raise UsageError(first_line(str(e))) from None
    try:
        derived = stacked_modules(model)
    except Exception:  # noqa: BLE001 - boundary: the user's model; its own rows say what is odd, the capture goes on
        _log.debug("nnx_lab: the model's stacked modules not found", exc_info=True)
        derived = ()
    return derived + declared


def _report(capture: Capture, spy: LossSpy | None, args: argparse.Namespace, bins: int) -> CaptureReport:
    """The CaptureReport of what was captured, with the gradients and ``--grads`` messages (a
    ``--layers`` that fits nothing captured: a message, and one row per value)."""
    from ..core.capture import capture_report
    from ..core.snapshot import LayerError

    captured = capture.captured
    if captured is None:  # the body ran under the Capture (_run_body), whose exit sets it
        raise RuntimeError("nothing captured: the cell body did not run under the Capture")

    def report_with(layers):
        return capture_report(
            captured,
            grads=_grads(spy),
            types=capture.types,
            seen_types=capture.seen_types,
            matched=None if args.only is None else capture.matched,
            bins=bins,
            only_text=None if args.only is None else f"--only {args.only}",
            inside_own=capture.inside_own,
            layers=layers,
        )

    try:
        report = report_with(args.layers)
    except LayerError as e:
        report = report_with(tuple(entry for entry in args.layers if len(entry) == 3))
        report = dataclasses.replace(report, messages=(*report.messages, f"--layers: {first_line(str(e))}"))
    if spy is not None:
        report = dataclasses.replace(report, messages=(*report.messages, *spy.messages(args.target.strip())))
    copied = getattr(capture, "copied_calls", 0)
    if copied and not jax_leaves(captured):
        # jax.jit(lambda m, x: m(x))(model, x): the Module went in as a pytree and was rebuilt inside
        # the trace; what its methods recorded stayed on that copy.
        report = dataclasses.replace(
            report,
            messages=(
                *report.messages,
                (
                    f"{copied} method call{'s' if copied != 1 else ''} ran on copies of the model inside a jax transform "
                    "(a Module passed to jax.jit as a pytree is rebuilt there) and what they recorded stayed there: "
                    "use nnx.jit, or capture the eager call"
                ),
            ),
        )
    return report


def jax_leaves(tree: nnx.State) -> list:
    import jax

    return jax.tree_util.tree_leaves(tree)


def _bind(shell: InteractiveShell, name: str, capture: Capture, spy: LossSpy | None) -> None:
    """NAME = the captured State (and NAME_grads = the gradients with ``--grads``)."""
    if spy is not None:
        shell.user_ns[f"{name}_grads"] = _grads(spy)
    shell.user_ns[name] = capture.captured


def _grads(spy: LossSpy | None) -> Any:
    return spy.result.grads if spy is not None and spy.result is not None else None


def _types(text: str | None, namespace: dict) -> Any:
    from ..core.capture import DEFAULT_TYPES, resolve_types

    if text is None:
        return DEFAULT_TYPES
    try:
        return resolve_types(text, namespace)
    except (TypeError, ValueError) as e:
        raise UsageError(f"--types: {first_line(str(e))}{_type_hint(text, namespace)}") from None


def _type_hint(text: str, namespace: dict) -> str:
    """ "; did you mean Intermediate?" for the first name of ``--types`` that names no Variable type."""
    from flax import nnx

    from ..core.capture import resolve_types

    known = [name for name, v in vars(nnx).items() if isinstance(v, type) and issubclass(v, nnx.Variable)]
    known += [name for name, v in namespace.items() if isinstance(v, type) and issubclass(v, nnx.Variable)]
    for name in (part.strip() for part in text.split(",")):
        try:
            resolve_types(name, namespace)
        except (TypeError, ValueError):
            return did_you_mean(name.rsplit(".", 1)[-1], known)
    return ""


def show(report: CaptureReport, **view: Any) -> None:
    """Display a CaptureReport as the capture panel's table, without toggles (``view``: the
    :class:`~nnx_lab.widgets.capture_report.CaptureReportView` arguments); frontends without
    widgets show its text and escaped HTML."""
    from IPython.display import display

    from ..widgets.capture_report import CaptureReportView

    display(CaptureReportView(report, **view))
