"""Capture what modules ``sow`` and ``perturb``, and their method outputs, without editing the model:
flax's own ``__captures__`` mechanism (``nnx.capture``'s) as a context manager, with what a notebook
needs on top (docs/guide/capture.md, "How it works").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal, Sequence, cast

from flax import nnx
from flax.nnx import graph as nnx_graph
from flax.typing import PathParts

from .. import compat
from ..graph import Path, module_methods, select_modules, selector, sigint_deferred
from ..stats import DEFAULT_BINS
from ._arming import (
    ATTR,
    LinenIntermediates,
    MethodOutputs,
    Seen,
    armed_entries,
    forget_aside,
    install_slots,
    register,
    remove_slots,
    sown_by_classes,
    unregister,
)
from ._collect import absorb, collect
from ._errors import CapturesInGraph, SownInScan, graph_refused, sown_in_scan
from ._linen import tonnx_class
from ._methods import patch, unpatch
from ._options import check_model, group_by_module, method_type, selects_all
from ._report import CaptureReport, PendingCaptureReport
from ._types import DEFAULT_TYPES, resolve_types

if TYPE_CHECKING:
    from ._table import Layers
    from ._types import TypesSpec

_log = logging.getLogger("nnx_lab")

_MISSING = object()


class Capture:
    """Collect what ``model``'s submodules sow (and, with ``methods``, every method's output).

    While entered, every submodule of ``model`` carries flax's ``__captures__``; on exit (always,
    also on an exception or KeyboardInterrupt) they are removed and every patched class method is
    restored; then ``captured`` (an ``nnx.State`` keyed by module path, then sow name),
    ``seen_types`` (every type sown or perturbed, chosen or not; with those the modules' classes
    were seen sowing before, since a cached jit trace runs no Python) and ``matched`` (module paths
    ``only`` selected) are filled in. A Capture can be entered once.

    The user's own ``nnx.capture(...)`` called while armed takes over for its duration, as an inner
    ``nnx.capture`` does in flax: it gets exactly what flax gives it, and nothing of that call is
    captured here; ``inside_own`` counts such calls (eager or traced), and the report says so.

    Args:
      model: the ``nnx.Module`` whose submodules are captured.
      types: the Variable types to keep (types, or names: see :func:`resolve_types`), default
        ``Intermediate``.
      methods: record each public method's and ``__call__``'s output under its name (``True``
        means as ``nnx.Intermediate``, or give a Variable type).
      only: an NNX filter on ``(path, module)`` (``nnx.Linear``, ``nnx.PathContains('attn')``, a
        function), or a module path (``"blocks[0]"``, ``"blocks/0"``, a key tuple) meaning that
        module and all under it.
      init: a State of starting values (the perturbations of the gradient recipe).

    Raises:
      TypeError: ``model`` is not an ``nnx.Module``; ``only``, ``methods`` or ``init`` of the
        wrong kind; a type that is not a Variable type.
      ValueError: a type name that names no Variable type.
      RuntimeError: the Capture is entered a second time; or (``NeedsNewerFlax``) the installed
        flax has no ``nnx.capture``.

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from nnx_lab import Capture
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> with Capture(model, methods=True) as cap:
    ...     y = model(jnp.ones((1, 2)))
    >>> cap.captured["layers"][0]["__call__"].get_value()[0].shape
    (1, 3)
    >>> cap.seen_types, cap.inside_own
    ((<class 'flax.nnx.variablelib.Intermediate'>,), 0)
    """

    copied_calls: int  # method outputs recorded on copies a transform made (_methods); set once there is one

    def __init__(
        self,
        model: nnx.Module,
        *,
        types: TypesSpec = DEFAULT_TYPES,
        methods: bool | type = False,
        only: Any = ...,
        init: nnx.State | None = None,
    ):
        compat.require("nnx.capture", "capture")
        check_model(model)
        self.model = model
        self.sown_types = resolve_types(types)  # what sow/perturb values are kept for
        self.method_type = method_type(methods)
        # Every type in the result: method outputs come back as method_type, but they are sown
        # into a marker of their own, so choosing methods does not also keep that type's sows.
        self.types = self.sown_types
        if self.method_type is not None and self.method_type not in self.types:
            self.types = (*self.types, self.method_type)
        self.only = only
        self._selector = selector(only)
        # Run the filter once now: one that raises or answers other than True/False fails here,
        # before anything is armed (it runs again when entered, on the modules present then).
        select_modules(list(nnx.iter_modules(model)), self._selector)
        if init is not None and not isinstance(init, (nnx.State, dict)):
            raise TypeError(f"init must be an nnx.State, got {type(init).__name__}")
        self.init = init
        self._init_by_module = group_by_module(init)
        self.captured: nnx.State | None = None
        self.seen_types: tuple[type, ...] = ()
        self.matched: tuple[Path, ...] = ()
        self._seen: list[type] = []
        self.inside_own = 0  # calls of the user's own nnx.capture while armed: their values went to it
        self._armed: list[
            tuple[PathParts, nnx.Module, bool, object]
        ] = []  # path, module, selected, stashed __captures__
        self._armed_ids: set[int] = set()
        self._patched: list[tuple[type, str]] = []
        self._slots: list[type] = []
        self._state = "new"

    # -- arming

    def __enter__(self) -> Capture:
        if self._state != "new":
            raise RuntimeError("a Capture can be entered only once; make a new one")
        self._state = "armed"
        try:
            # A Ctrl-C held back during arming is raised when the deferral ends, after _arm
            # returned: it must disarm too, since __exit__ never runs when __enter__ raises.
            with sigint_deferred():
                self._arm()
        except BaseException:  # cleanup, re-raised (Ctrl-C included): never left armed
            with sigint_deferred():
                self._disarm()
            raise
        return self

    def _arm(self) -> None:
        modules = list(nnx.iter_modules(self.model))
        selected = select_modules(cast("list[tuple[Path, Any]]", modules), self._selector)  # only read there
        self.matched = tuple(path for (path, _), s in zip(modules, selected) if s)
        init_by_module = self._init_by_module
        tonnx = tonnx_class()
        to_patch: list[tuple[type, str]] = []
        register(self)
        self._slots = install_slots(type(m) for (_, m) in modules if _armable(m))
        for (path, module), sel in zip(modules, selected):
            if not _armable(module):
                continue
            values: dict[type, dict] = {t: {} for t in self.sown_types} if sel else {}
            for key, value, kind in init_by_module.get(tuple(path), ()):
                values.setdefault(kind, {})[key] = value
            entries: list[nnx.Variable] = [Seen({}), *(t(v) for t, v in values.items())]
            if sel and self.method_type is not None:
                entries.append(MethodOutputs({}, output_type=self.method_type))
                to_patch += module_methods([type(module)])
            if tonnx is not None and isinstance(module, tonnx):
                # Patched even when not selected: ToNNX must not see the __captures__ attribute.
                to_patch.append((tonnx, "__call__"))
                if sel and nnx.Intermediate in self.sown_types:
                    entries.append(LinenIntermediates({}))
            stash = vars(module).get(ATTR, _MISSING)
            self._armed.append((tuple(path), module, sel, stash))
            self._armed_ids.add(id(module))
            setattr(module, ATTR, nnx.data(tuple(entries)))
        self._patched = patch(list(dict.fromkeys(to_patch)))
        self._recorded_names = frozenset(name for _, name in to_patch)  # keys a recorded output adds

    # -- disarming

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        with sigint_deferred():
            self._disarm()
        if exc is not None and sown_in_scan(exc, getattr(self, "_recorded_names", ())):
            raise SownInScan(
                f"a module sowed{' (or had its method output recorded)' if self.method_type else ''} inside a jax "
                "scan (nnx.RNN's cell, nnx.scan): the scan's carry changed structure and jax refused it; flax's own "
                "nnx.capture fails the same way there (an upstream limit)"
                + ("; capture without methods" if self.method_type else "")
            ) from None
        what = graph_refused(exc) if exc is not None else None
        if what:
            raise CapturesInGraph(
                f"the model was refused while armed for capture: every armed module holds flax's `__captures__` "
                f"entries in its graph, and {what}; flax's own nnx.capture fails the same way here (an upstream "
                "limit)"
            ) from None
        return False

    def _disarm(self) -> None:
        if self._state == "done":
            return
        self._state = "done"
        try:
            unpatch(self._patched)
        finally:
            self._patched = []
            flat: list[tuple[PathParts, nnx.Variable]] = []
            try:
                for path, module, sel, _stash in self._armed:
                    entries = armed_entries(module)
                    if sel:
                        flat += collect(path, entries, self.sown_types)
            finally:
                for _path, module, _sel, stash in self._armed:
                    forget_aside(module)  # a flax capture that raised left its tuple: dropped
                    if ATTR in vars(module):
                        delattr(module, ATTR)
                    if stash is not _MISSING:
                        setattr(module, ATTR, nnx.data(stash))
                remove_slots(self._slots)
                self._slots = []
                unregister(self)
            self.captured = nnx.from_flat_state(flat) if flat else nnx.State({})
            seen = list(self._seen)
            # Types sown in a cached jit trace were seen when it was traced, by class.
            seen += [t for t in sown_by_classes(m for _, m, _, _ in self._armed) if t not in seen]
            for _, var in flat:
                if type(var) not in seen:
                    seen.append(type(var))
            self.seen_types = tuple(seen)

    # -- feeding values in from outside (gradient runs on a copy of the model)

    def absorb(self, state: nnx.State, seen_types: Sequence[type] = ()) -> None:
        """Add the values of a State captured elsewhere (on a copy of this model) as if sown here: tuples
        appended (call order kept), any other value replacing; only into the selected modules, only of
        this capture's types. ``seen_types`` (types sown over there) join :attr:`seen_types`."""
        if self._state != "armed":
            raise RuntimeError("absorb() only while the Capture is entered")
        modules = {path: module for path, module, sel, _ in self._armed if sel}
        absorb(state, modules, self.types, self.sown_types, self._seen, seen_types)

    def report(self, *, grads: nnx.State | None = None, bins: int = DEFAULT_BINS) -> CaptureReport:
        """The :class:`CaptureReport` of what this capture collected (after exit)."""
        return self.pending_report(grads=grads, bins=bins).finish()

    def pending_report(
        self, *, grads: nnx.State | None = None, bins: int = DEFAULT_BINS, layers: Layers = None
    ) -> PendingCaptureReport:
        """The report, its statistics dispatched behind the call's device work and not waited for
        (``layers``: as :func:`capture_report`'s)."""
        if self.captured is None:
            raise RuntimeError("nothing captured yet: use the Capture in a `with` block first")
        return PendingCaptureReport(
            self.captured,
            grads=grads,
            types=self.types,
            seen_types=self.seen_types,
            matched=None if selects_all(self.only) else self.matched,
            bins=bins,
            inside_own=self.inside_own,
            layers=layers,
        )


def _armable(module: object) -> bool:
    """False for a module whose children are keyed by integers (``nnx.List``): a string key beside
    them would make its state unsortable for jax's tree functions. Such containers do not sow."""
    try:
        impl = nnx_graph.get_node_impl(module)  # None only for a non-node: no children to list
        keys = impl.node_dict(module) if impl is not None else ()
    except Exception:  # noqa: BLE001 - boundary: a user's graph node may raise anything; armed as any module
        _log.debug("nnx_lab: the children of %s not listed", type(module).__name__, exc_info=True)
        return True
    return not any(isinstance(k, int) for k in keys)
