"""The capture panel: toggles for what ``nnx.capture`` collects, and what the last call captured.

``panel = nnx_lab.capture_panel(model)`` shows the toggles (Variable types, method outputs, a checkbox
per submodule: :class:`nnx_lab.core.capture.CaptureToggles`); ``panel(x)`` calls the model under them and
shows every captured value with on-device statistics and a histogram (described by ``_describing.py`` on
the live-refresh engine); ``panel.grads(loss_fn, x)`` adds each perturbed value's gradient. A click is
answered with the ``controls`` trait (a rejected one is undone on screen); one made while a cell runs is
queued (:mod:`nnx_lab._ipython.busy_queue`) and applies at the panel's next call.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Callable, Iterable, Iterator, TypeVar

import traitlets
from flax import nnx

from .._ipython import busy_queue, cell_hooks
from ..core import capture as core
from ..core import compat
from ..core.capture import CaptureToggles, GradResult, Modules, caller_namespace, intermediate_grads, module_tree
from ..core.live import Throttle
from ..core.render import pre_html
from ..core.text import first_line, one_line
from . import traits
from ._base import STATIC, Widget
from ._capture_toggles import ToggleProperties
from ._describing import Descriptions, LayerAxes, PendingReport, grads_report, loss_status
from .requests import ANY, Buffers, MessageId, command, message_id

GONE = "the model is gone (deleted or garbage-collected)"

T = TypeVar("T")


class CapturePanel(ToggleProperties, Widget):
    """Capture toggles over one model, and the values its last call captured.

    Create it with :func:`capture_panel`. ``panel(*args, **kwargs)`` calls the model and returns
    its result (``panel.run(fn, *args)`` calls any function of it, an ``nnx.jit`` one included);
    ``panel.captured`` is the captured ``nnx.State``; ``panel.grads(loss_fn, *args)`` adds
    gradients. ``panel.types``, ``panel.methods`` and ``panel.modules`` read and set the
    toggles from Python, the same as clicking them.

    A call is described (statistics and histograms on the device, one small fetch) and shown at
    once. In a loop, ``for batch in panel.track(batches): panel(batch)`` keeps every call's values
    in ``panel.captured`` but describes them at most ``max_rate`` times a second and within
    ``budget`` of the loop's time (the description waits for the device); the last call is shown
    when the loop ends. In a notebook, calls after the first in one cell are held back the same
    way, and the last one is shown after the cell.

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from nnx_lab import capture_panel
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> panel = capture_panel(model, display=False)
    >>> panel.methods = True
    >>> panel.modules
    ('', 'layers', 'layers[0]')
    >>> for x in panel.track([jnp.ones((1, 2))] * 3):
    ...     y = panel(x)
    >>> panel.status["calls"], y.shape
    (3, (1, 3))
    """

    _esm = STATIC / "capture.js"
    controls = traits.Payload(traits.CaptureControls).tag(sync=True)
    status = traits.Payload(traits.CaptureStatus).tag(sync=True)
    report = traits.Payload(traits.CaptureReport).tag(sync=True)
    busy_note = traitlets.Unicode("").tag(sync=True)  # busy_queue.busy_note: empty where clicks are read mid-cell
    _queue_while_busy = True  # a click while a cell runs: acked "queued", applied at the next call

    def __init__(
        self,
        model: nnx.Module,
        *,
        types: Any = core.DEFAULT_TYPES,
        methods: bool = False,
        max_rate: float = 2.0,
        budget: float = 0.02,
        namespace: dict | None = None,
        layers: dict | None = None,
        **kwargs: Any,
    ):
        compat.require("nnx.capture", "the capture panel")
        if not isinstance(model, nnx.Module):
            raise TypeError(f"capture_panel needs an nnx.Module, got {type(model).__name__}")
        self._layers = LayerAxes(layers)  # a TypeError here for a malformed declaration
        throttle = Throttle(max_rate, budget, what="descriptions")  # between two descriptions inside track()
        chosen = core.resolve_types(types, namespace if namespace is not None else caller_namespace(1, types))
        if not chosen:
            raise ValueError("capture_panel needs at least one Variable type to collect")
        self._toggles = CaptureToggles(chosen, methods)
        self._ref = weakref.ref(model)  # `del model` frees its memory while the panel is on screen
        self._target = type(model).__name__
        self._known_modules: Modules = []  # the last module list read (kept when the model goes)
        self._gone_shown = False
        self._captured = self._grads = self._last_report = None  # the last call's values, gradients, report
        self._last_toggles: tuple | None = None  # the toggles of the last call
        self._answered: MessageId = None  # id of the last browser message answered
        self._descriptions = Descriptions(
            throttle, show=self._show, fail=lambda text: self._set_status(text, level="error")
        )
        self._looping = self._calls = self._rev = 0  # track() loops running, calls, revision of the controls
        self._status_lock = threading.RLock()
        self._cell: int | None = None  # the notebook cell of the last call
        super().__init__(**kwargs)
        self._publish_controls()
        self._set_status()

    # -- calling the model ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the model with these arguments under the current toggles; returns its result."""
        return self._capture(None, args, kwargs, "the call failed")

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with the model captured under the current toggles: any function
        that calls the model, such as an ``nnx.jit`` step taking it as an argument. Returns its result."""
        if not callable(fn):
            raise TypeError(f"panel.run needs a function to call, got {type(fn).__name__}")
        return self._capture(fn, args, kwargs, "panel.run failed")

    def _prepare(self) -> tuple[nnx.Module, Modules, dict, tuple]:
        """Before each call: apply toggles clicked while this cell runs, then read them (and the layer axes)."""
        busy_queue.drain()
        model = self._alive()
        modules = self._module_list()
        return model, modules, self._toggles.options(modules), self._layers.spec(model, modules)

    def _timed(self, failed: str, call: Callable[[], T]) -> tuple[T, float]:
        """``call()`` and the seconds it took; a failure is said on the panel and raised."""
        start = time.perf_counter()
        try:
            result = call()
        except BaseException as error:
            self._set_status(f"{failed}: {one_line(error)}", level="error")
            raise
        return result, time.perf_counter() - start

    def _capture(self, fn: Callable[..., Any] | None, args: tuple, kwargs: dict, failed: str) -> Any:
        model, modules, options, layers = self._prepare()

        def call() -> tuple[Any, core.Capture]:
            with core.Capture(model, **options) as cap:
                out = (model if fn is None else fn)(*args, **kwargs)
            return out, cap

        (result, cap), elapsed = self._timed(failed, call)
        describe = self._layers.later(lambda spec: cap.pending_report(layers=spec), layers)
        self._deliver(cap.captured, None, describe, modules, cap.seen_types, elapsed)
        return result

    def grads(self, loss_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> GradResult:
        """Gradient of ``loss_fn(model, *args, **kwargs)`` with respect to every perturbed value.

        Runs flax's perturb recipe through :func:`nnx_lab.core.capture.intermediate_grads` under the
        current toggles and shows each gradient's statistics next to its forward value. Returns
        what that function returns (``loss``, ``forward``, ``grads``).
        """
        model, modules, options, layers = self._prepare()
        call = lambda: intermediate_grads(model, loss_fn, *args, **options, **kwargs)  # noqa: E731
        result, elapsed = self._timed("panel.grads failed", call)
        seen = tuple(getattr(result, "seen_types", ()) or ())
        describe = self._layers.later(grads_report(result, options, seen), layers)
        self._deliver(result.forward, result.grads, describe, modules, seen, elapsed, loss=result.loss)
        return result

    def track(self, iterable: Iterable[T]) -> Iterator[T]:
        """``for batch in panel.track(batches): panel(batch)``: every call is captured, and shown
        at most ``max_rate`` times a second within the time ``budget``; the last one when the loop
        ends. Toggles clicked meanwhile apply at the next call."""
        self._looping += 1
        try:
            for item in iterable:
                yield item
                busy_queue.drain()
        finally:
            self._looping -= 1
            if not self._looping:
                self.flush(wait=False)

    def flush(self, *, wait: bool = True) -> None:
        """Show the last call if a loop's throttle held it back; never raises. Without ``wait``, its
        description is dispatched and shown by a thread once its numbers arrive (where widget
        messages may come from threads), so the end of a loop or cell does not wait for the device."""
        on_its_way = self._descriptions.flush(wait=wait)
        if on_its_way or self.status.get("calls") != self._calls:  # the call count is current at once
            self._set_status(self.status.get("message", ""), level=self.status.get("level", ""))

    def close(self) -> None:
        """Close the widget and let go of the captured arrays (the model is the caller's)."""
        self._captured = self._grads = self._last_report = None
        descriptions = getattr(self, "_descriptions", None)  # None: __init__ refused its arguments
        if descriptions is not None:
            descriptions.clear()
        super().close()

    # -- what the last call captured ---------------------------------------------------------
    @property
    def model(self) -> nnx.Module:
        """The model (held weakly: ReferenceError once it was deleted)."""
        model = self._ref()
        if model is None:
            raise ReferenceError(GONE)
        return model

    def _alive(self) -> nnx.Module:
        """The model, or a ReferenceError (and the panel says so) when it is gone."""
        if self._ref() is None:
            self._after_cell()
        return self.model

    def _after_cell(self) -> None:
        """After every cell: the last call is shown (a loop broken off may have held it back), and
        a model collected since the last cell is shown as gone, once."""
        self.flush(wait=False)
        if self._ref() is None and not self._gone_shown:
            self._gone_shown = True
            self._set_status(GONE, level="error")

    @property
    def captured(self) -> nnx.State | None:
        """The State the last call captured (keyed by module path and sow name); None before a call."""
        return self._captured

    @property
    def gradients(self) -> nnx.State | None:
        """The gradients of the last ``panel.grads`` call; None after a plain call."""
        return self._grads

    @property
    def last_report(self) -> core.CaptureReport | None:
        """The description of the last call (described now if a loop's throttle held it back)."""
        self.flush()
        return self._last_report

    # -- talking to the browser ------------------------------------------------------------------
    def _refuse(self, content: object, problem: str) -> None:  # from any thread: nothing of it is read
        self._set_status(problem, level="error")
        self._publish_controls()

    @command(ANY)  # a toggle; CaptureToggles refuses unknown types, and the answer undoes the click
    def _toggle(self, content: dict, _buffers: Buffers) -> None:
        modules = self._module_list()
        try:
            self._toggles.apply_message(content, modules)
        except (TypeError, ValueError) as error:
            self._set_status(first_line(str(error)), level="error")
        else:
            gone = self._ref() is None  # a toggle on a panel whose model went: still answered, still says so
            self._set_status(GONE if gone else "", level="error" if gone else "")
        if "id" in content:
            self._answered = message_id(content)
        self._publish_controls(modules)  # always answer, so that a rejected click is undone on screen

    def _publish_controls(self, modules: Modules | None = None) -> None:
        self._rev += 1
        modules = self._module_list() if modules is None else modules
        self.controls = {
            "rev": self._rev,
            **self._toggles.to_dict(modules),
            "answered": self._answered,
            "pending": self._last_toggles is not None and self._toggles.state() != self._last_toggles,
        }

    def _set_status(self, message: str = "", *, level: str = "", **extra: Any) -> None:
        # The publishing thread shows descriptions too: the count is read and set under one lock, so a
        # status built before the loop's last calls can never be set after it (the count stays current).
        with self._status_lock:
            status = {k: v for k, v in self.status.items() if k in ("kind", "elapsed_ms", "loss", "loss_text")}
            status.update(extra)
            self.status = {"target": self._target, "calls": self._calls, **status, "message": message, "level": level}

    def _deliver(
        self,
        captured: nnx.State | None,
        grads: nnx.State | None,
        describe: Callable[[], PendingReport],
        modules: Modules,
        seen: Iterable,
        elapsed: float,
        loss: Any = None,
    ) -> None:
        """A call's values (``describe()``: its pending report): kept at once, described and shown now,
        or later inside a throttled loop."""
        self._calls += 1
        self._captured, self._grads = captured, grads
        for t in seen:
            if isinstance(t, type) and issubclass(t, nnx.Variable):
                self._toggles.offer(t)
        self._last_toggles = self._toggles.state()
        self._descriptions.hold(describe, modules, elapsed, loss)
        cell, self._cell = self._cell, cell_hooks.current_cell()
        if self._looping or (cell is not None and cell == self._cell):  # a loop, or a second call in one cell
            self._descriptions.step()  # nothing waits for the device
        else:
            self.flush()  # one call: described and shown now

    def _show(self, report: core.CaptureReport, modules: Modules, *, elapsed: float, loss: Any = None) -> None:
        self._last_report = report
        self.report = report.to_dict(classes=dict(modules))
        self._set_status(elapsed_ms=round(elapsed * 1000, 1), **loss_status(loss))
        self._publish_controls(modules)
        if self._saved_before_call:  # the output shown says "no call yet": the saved copy gets this call
            self._saved_before_call = False
            self._update_display()

    #: shown before any call: the saved notebook's copy (text/plain, text/html) says "no call yet"
    _saved_before_call = False

    def show(self) -> CapturePanel:
        super().show()
        self._saved_before_call = self._display_handle is not None and self._last_report is None
        return self

    def _module_list(self) -> Modules:
        model = self._ref()
        if model is None:
            return self._known_modules  # gone: the toggles stay as they were
        self._known_modules = module_tree(model)
        return self._known_modules

    # -- what a saved notebook shows without a kernel ----------------------------------
    def _fallback(self) -> tuple[str, str]:
        report = self.last_report
        if report is not None:
            return report.to_text(), report.to_html()
        return repr(self), pre_html(repr(self), ' class="nnx-lab-capture-static"')

    def __repr__(self) -> str:
        target = self._target + (" (gone)" if self._ref() is None else "")
        what = ", ".join(self._toggles.type_names()) + (" + method outputs" if self.methods else "")
        if self._captured is None:
            return f"CapturePanel · {target} · collects {what} · no call yet"
        n = len(list(nnx.to_flat_state(self._captured)))
        return (
            f"CapturePanel · {target} · collects {what} · {self._calls} call{'s' * (self._calls != 1)} · {n} captured"
        )


def capture_panel(
    model: nnx.Module,
    *,
    types: Any = core.DEFAULT_TYPES,
    methods: bool = False,
    max_rate: float = 2.0,
    budget: float = 0.02,
    display: bool = True,
    layers: dict | None = None,
) -> CapturePanel:
    """Show capture toggles for ``model`` and return the panel; ``panel(x)`` calls the model under them.

    Args:
      model: an ``nnx.Module``.
      types: Variable types to collect (types, or names such as ``"Intermediate, MyActivation"``:
        looked up in ``nnx``, then where ``capture_panel`` is called from, then in the notebook).
      methods: record every method's output too.
      max_rate: inside ``panel.track(...)``, describe calls at most this many times a second,
        in (0, 100].
      budget: and within this fraction of the loop's time, in (0, 1].
      display: show the panel; with ``False`` only return it.
      layers: path prefix -> layer axis of values sown in ``nnx.scan`` over stacked layers (``{"blocks": 0}``):
        one row per layer, as ``watch(layers=...)`` (flax's metadata needs none; one fitting nothing is a message).

    Raises:
      TypeError: ``model`` is not an ``nnx.Module``, a type is not a Variable type, or ``layers`` malformed.
      ValueError: a name that names no Variable type, no type at all, or ``max_rate`` /
        ``budget`` out of range.
      NeedsNewerFlax: (a ``RuntimeError``) the installed flax has no ``nnx.capture``.

    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> panel = capture_panel(model, methods=True, display=False)
    >>> y = panel(jnp.ones((1, 2)))
    >>> panel.status["calls"], panel.captured["layers"][0]["__call__"].get_value()[0].shape
    (1, (1, 3))
    """
    panel = CapturePanel(
        model,
        types=types,
        methods=methods,
        max_rate=max_rate,
        budget=budget,
        namespace=caller_namespace(1, types),
        layers=layers,
    )
    return panel.show() if display else panel
