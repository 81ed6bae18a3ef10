"""View panels and mode toggles: every submodule's ``set_view`` options and train/eval mode, as controls."""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, MutableMapping, TypeVar

import traitlets

from .._ipython import busy_queue, cell_hooks
from .._ipython.names import check_name
from ..core import compat
from ..core import views as core
from ..core.render import pre_html
from ..core.text import clip, first_line, json_key, one_line, safe_repr
from . import traits, wire
from ._base import STATIC, Widget
from .requests import AckFields, Buffers, command, message_id

if TYPE_CHECKING:
    from flax import nnx

_log = logging.getLogger("nnx_lab")

T = TypeVar("T")
#: what a panel whose model went says (and raises as a ViewError)
GONE = "the model is gone (deleted or garbage-collected)"


class ViewPanel(Widget):
    """The ``set_view`` options of every submodule instance of a model, as controls.

    Made by :func:`view_panel` (``variant="views"``: options, "create view", "apply in place")
    and :func:`mode_toggle` (``variant="modes"``: a train/eval switch and per-instance modes).
    The same requests are methods here: :meth:`create_view`, :meth:`apply`, :meth:`set_mode`.
    The model is held by weak reference.

    >>> from flax import nnx
    >>> from nnx_lab import mode_toggle
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    >>> panel = mode_toggle(model, display=False)
    >>> panel.set_mode("eval"), model.layers[1].deterministic
    ('model.eval()', True)
    >>> panel.refresh()
    >>> panel.payload["mode"]
    'eval'
    """

    _esm = STATIC / "views.js"
    payload = traits.Payload(traits.ViewsPayload).tag(sync=True)
    busy_note = traitlets.Unicode("").tag(sync=True)  # busy_queue.busy_note: empty where clicks are read mid-cell
    _queue_while_busy = True
    _queued_ack = {"code": "", "text": "queued: applies at the next tick()/track() step, or when the cell ends"}

    def __init__(
        self,
        model: nnx.Module,
        *,
        variant: str = "views",
        only: Any = ...,
        only_code: str | None = None,
        target: str | None = None,
        name: str | None = None,
        namespace: MutableMapping[str, Any] | None = None,
        **kwargs: Any,
    ):
        from flax import nnx

        if not isinstance(model, nnx.Module):
            raise TypeError(f"expected an nnx.Module, got {type(model).__name__}")
        if variant not in ("views", "modes"):
            raise ValueError(f"variant is 'views' or 'modes', not {variant!r}")
        if variant == "views":
            compat.require("nnx.view", "the set_view options panel")
        first = core.view_report(model, only=only)  # a filter that raises fails here, before any widget exists
        self._model = weakref.ref(model)
        self._namespace = namespace if namespace is not None else _user_namespace()
        self._target = target or _name_of(model, self._namespace) or "model"
        self._variant = variant
        self._only = only
        self._only_code = only_code
        self._default_name = name or f"{self._target.split('.')[0].split('[')[0]}_view"
        super().__init__(**kwargs)
        self.refresh(first)

    # -- what the panel shows ----------------------------------------------------------
    @property
    def model(self) -> nnx.Module | None:
        return self._model()

    def report(self) -> core.ViewReport:
        model = self._model()
        if model is None:
            raise core.ViewError(GONE)
        return core.view_report(model, only=self._only)

    def refresh(self, report: core.ViewReport | None = None) -> None:
        """Read every instance's current values again (or show ``report``, just read) and re-send them."""
        try:
            report = report if report is not None else self.report()
            model = self._model()
            if model is None:
                raise core.ViewError(GONE)
        except core.ViewError as e:
            self.payload = {**self.payload, "message": first_line(str(e)), "mode": "none", "gone": True}
            return
        self.payload = _payload(
            report, self._variant, self._target, self._default_name, self._namespace, self._base(model)
        )

    def _base(self, model: nnx.Module) -> core.Scope:
        """What "all modules" means here (the panel's ``only=``), read from the model as it is now."""
        return core.base_scope(model, self._only, self._namespace, self._only_code)

    # -- the requests, from Python ------------------------------------------------------
    def create_view(self, name: str | None = None, only: dict[str, Any] | None = None, **values: Any) -> nnx.Module:
        """Bind ``nnx.view(model, only=..., **values)`` to ``name`` in the user namespace; returns it.

        ``only`` is ``None`` (the panel's modules), ``{"class": NAME}`` or ``{"path": (...)}``.
        """
        return self._run(
            {"type": wire.VIEW, "name": name or self._default_name, "only": only, "values": values}, from_text=False
        )[0]

    def apply(self, only: dict[str, Any] | None = None, **values: Any) -> str:
        """``model.set_attributes(only, **values)`` in place, all or nothing; returns the line."""
        return self._run({"type": wire.APPLY, "only": only, "values": values}, from_text=False)[1]

    def set_mode(self, mode: str) -> str:
        """``model.train()`` / ``model.eval()`` in place; returns the line."""
        return self._run({"type": wire.MODE, "mode": mode}, from_text=False)[1]

    # -- the training-loop API: apply clicks made while a cell runs -------------------------
    def tick(self) -> int:
        """Apply requests queued while this cell runs (see :mod:`nnx_lab._ipython.busy_queue`); never raises."""
        return busy_queue.drain()

    def track(self, iterable: Iterable[T]) -> Iterator[T]:
        """``for batch in panel.track(batches): step(batch)``: queued clicks apply between steps."""
        for item in iterable:
            yield item
            busy_queue.drain()

    def _after_cell(self) -> None:  # live's hook has drained the inbox already
        if self._model() is not None or not self.payload.get("gone"):
            self.refresh()  # a model collected since the last cell: the panel says so, once

    # -- browser messages ---------------------------------------------------------------
    def _refuse(self, content: object, problem: str) -> None:
        self.send({"type": wire.ACK, "id": message_id(content), "state": "error", "text": problem, "code": ""})

    @command(wire.VIEW, wire.APPLY, wire.MODE)
    def _request(self, content: dict, _buffers: Buffers) -> AckFields:
        """A request from the browser; answered with its outcome after every panel on the model shows it."""
        ack: AckFields
        try:
            _, code, text = self._run(content, from_text=True)
            ack = {"state": "done", "text": clip(text, 300), "code": code}
        except core.ViewError as e:
            ack = {"state": "error", "text": first_line(str(e)), "code": ""}
        except Exception as e:  # noqa: BLE001 - boundary (a widget message): never into the kernel's message loop
            _log.warning("nnx_lab: a view panel's request failed", exc_info=True)
            ack = {"state": "error", "text": one_line(e), "code": ""}
        model = self._model()
        if model is not None:  # every panel on this model shows the change, before the ack arrives
            for panel in cell_hooks.widgets(ViewPanel):
                if panel.model is model:
                    panel.refresh()
        return ack

    def _run(self, content: Mapping[str, Any], *, from_text: bool) -> tuple[nnx.Module, str, str]:
        model = self._model()
        if model is None:
            raise core.ViewError(GONE)
        kind = content.get("type")
        if kind == wire.MODE:
            mode = content.get("mode")
            if not isinstance(mode, str):
                raise core.ViewError(f"mode is 'train' or 'eval', not {mode!r}")
            code = core.set_mode(model, mode, self._target)
            after = core.view_report(model, only=self._only)
            return model, code, f"{self._target} is now {after.mode}"
        report = core.view_report(model, only=self._only)
        if not report.modules:
            raise core.ViewError(report.summary())
        scope = core.scope_for(report, content.get("only"), self._namespace, self._base(model))
        raw = content.get("values")
        if not isinstance(raw, Mapping):
            raise core.ViewError(f"values must be a mapping of set_view options, not {type(raw).__name__}")
        values = core.coerce_values(model, report, scope, raw, from_text=from_text)
        note = (
            ""
            if core.UNNAMED not in (scope.code or "")
            else (
                f" ({core.UNNAMED} is the only= filter given to the panel, which has no Python text: "
                "pass only_code= to name it)"
            )
        )
        if kind == "apply":
            core.apply_in_place(model, scope, values)
            return model, core.apply_code(self._target, scope, values), f"set in place on {scope.label}{note}"
        name = content.get("name") or self._default_name
        if self._namespace is None:
            raise core.ViewError("no user namespace to bind the view in (not running in IPython)")
        try:
            check_name(name, what="view name", namespace=self._namespace, target=model)
        except ValueError as e:
            raise core.ViewError(str(e)) from None
        view = core.make_view(model, scope, values)
        self._namespace[name] = view
        return view, core.view_code(self._target, name, scope, values), f"{name} is a view of {self._target}{note}"

    # -- what a saved notebook shows without a kernel ------------------------------------
    def _fallback(self) -> tuple[str, str]:
        try:
            text = self.report().to_text()
        except core.ViewError as e:
            text = str(e)
        return text, pre_html(text, ' style="text-align:left"')

    def __repr__(self) -> str:
        return f"ViewPanel({self._variant}) · {self.payload.get('summary', '')}"


def view_panel(
    model: nnx.Module,
    *,
    only: Any = ...,
    only_code: str | None = None,
    name: str | None = None,
    target: str | None = None,
    display: bool = True,
) -> ViewPanel:
    """Controls for every submodule's ``set_view`` options: create ``nnx.view`` models or set in place.

    ``only`` limits the panel to some modules: an NNX filter (a class, ``nnx.PathContains(...)``,
    a function of ``(path, module)``) or a module path (``"layers[1]"``, ``"layers/1"``,
    ``("layers", 1)``: that module and everything under it). The lines the panel shows spell the
    filter as Python (``only_code`` when given); a function bound to no name shows as
    ``<your filter>``. Shows the panel unless ``display=False``; returns it either way.

    Args:
      model: an ``nnx.Module``.
      only: the modules the panel shows (see above); default all.
      only_code: how the lines the panel shows spell ``only``.
      name: the name "create view" binds (default ``<target>_view``).
      target: the model's name in those lines (default: the name it is bound to, or ``model``).
      display: show the panel; with ``False`` only return it.

    Raises:
      TypeError: ``model`` is not an ``nnx.Module``, or ``only`` is neither a filter nor a path.
      NeedsNewerFlax: (a ``RuntimeError``) the installed flax has no ``nnx.view``.

    >>> from flax import nnx
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    >>> panel = view_panel(model, display=False)
    >>> panel.apply(deterministic=True), model.layers[1].deterministic
    ('model.set_attributes(deterministic=True)', True)
    """
    panel = ViewPanel(model, variant="views", only=only, only_code=only_code, name=name, target=target)
    return panel.show() if display else panel


def mode_toggle(model: nnx.Module, *, target: str | None = None, display: bool = True) -> ViewPanel:
    """A train/eval switch (``model.train()`` / ``model.eval()`` in place) with every instance's mode.

    Args:
      model: an ``nnx.Module``.
      target: the model's name in the lines the panel shows (default: the name it is bound to,
        or ``model``).
      display: show the panel; with ``False`` only return it.

    Raises:
      TypeError: ``model`` is not an ``nnx.Module``.

    >>> from flax import nnx
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    >>> toggle = mode_toggle(model, display=False)
    >>> toggle
    ViewPanel(modes) · Sequential: train (1 of 1 modules with set_view are set to train or eval)
    >>> toggle.set_mode("eval"), model.layers[1].deterministic
    ('model.eval()', True)
    """
    panel = ViewPanel(model, variant="modes", target=target)
    return panel.show() if display else panel


# -- helpers ------------------------------------------------------------------------------


def _payload(
    report: core.ViewReport,
    variant: str,
    target: str,
    default_name: str,
    namespace: Mapping[str, Any] | None,
    base: core.Scope,
) -> dict:
    classes: dict[type, dict] = {}
    for m in report.modules:
        if variant == "views" and not m.has_set_view:
            continue  # nnx.view acts through set_view; a bare `training` attribute is the mode switch's
        group = classes.get(m.cls)
        if group is None:
            group = classes[m.cls] = {
                "class": m.class_name,
                "only": core.class_scope(m.cls, namespace, base).code,
                "args": [
                    {
                        "name": a.name,
                        "annotation": a.annotation,
                        "default": safe_repr(a.default, 200),
                        "doc": a.doc,
                        "kind": a.kind,
                        "nullable": "None" in (a.types or ()),
                    }
                    for a in m.args
                ],
                "instances": [],
            }
        group["instances"].append(
            {
                "path": m.path_text,
                "key": list(json_key(k) for k in m.path),
                "only": core.path_code(m.path),
                "mode": m.mode,
                "values": {a.name: safe_repr(a.current, 200) for a in m.args if a.has_current},
            }
        )
    return {
        "variant": variant,
        "root": report.root_type,
        "target": target,
        "default_name": default_name,
        "mode": report.mode,
        "summary": report.summary(),
        "count_text": report.count_text(),
        "disagreeing": list(report.disagreeing),
        "message": "" if report.modules else report.summary(),
        "base_only": base.code or "",
        "classes": list(classes.values()),
    }


def _user_namespace() -> dict | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.user_ns if shell is not None else None


def _name_of(obj: object, namespace: Mapping[str, Any] | None) -> str | None:
    if namespace is None:
        return None
    return next((k for k, v in namespace.items() if v is obj and not k.startswith("_")), None)
