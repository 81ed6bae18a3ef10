"""``nnx_lab.watch``: a live viewer of a model (a :class:`~nnx_lab.widgets.viewer.StateViewer`), or
of an Orbax checkpoint's statistics (a :class:`~nnx_lab.widgets.viewer_checkpoint.CheckpointViewer`)."""

from __future__ import annotations

from typing import Any

from .viewer import StateViewer

__all__ = ["watch"]


def watch(
    obj: Any,
    *,
    max_rate: float = 2.0,
    background: bool = False,
    stats: bool = True,
    history: int = 100,
    display: bool = True,
    optimizer: Any = None,
    updates: bool = True,
    layers: dict | None = None,
    rows_first: bool | None = None,
) -> StateViewer:
    """Show a live viewer of ``obj`` and return it; refreshes after every cell, on
    ``viewer.tick()`` / ``viewer.track(...)``, and optionally from a background thread.

    ``viewer.log(loss=loss)`` (or ``viewer.tick(loss=loss)``) draws scalars' curves in the header,
    never syncing them in the loop; the NaN/Inf banner names the first step and path where a NaN
    or Inf appeared until ``viewer.clear_alert()``.

    Holds ``obj`` by weak reference (keep your own reference to the model). A functional loop that
    rebinds its model (``model = nnx.merge(graphdef, state)``, ``model, opt_state = train_step(...)``)
    is followed by name: ``watch("model")`` looks the name up in the notebook at every refresh (it
    says "following `model`"; a name that is missing or bound to something else shows a status until
    it names a model again). Refreshing never raises. With several processes (``jax.distributed``),
    every process refreshes (they reduce sharded arrays together) and only process 0 displays.

    Args:
      obj: what :func:`nnx_lab.snapshot` accepts: an ``nnx.Module``, an ``nnx.State``, the
        ``(graphdef, state, ...)`` tuple of ``nnx.split`` ...; or a name (``"model"``, ``"trainer.model"``)
        to follow in IPython's user namespace; or an Orbax checkpoint directory (a ``pathlib.Path``, or
        a ``str`` that is no bound name): its static table (a :class:`CheckpointViewer`), rows from the
        metadata at once, statistics streamed after them.
      max_rate: refreshes per second at most, in (0, 100].
      background: also refresh from a background thread while a cell runs.
      stats: compute statistics on the device (``False``: descriptions only).
      history: how many refreshes to keep for the sparklines (at least 1).
      display: show the viewer; with ``False`` only return it.
      optimizer: an ``nnx.Optimizer`` of ``obj``: each row gains its optimizer state (Adam's ``mu``
        and ``nu``, momentum...) matched by path, and the header its step count. ``watch(optimizer)``
        alone lists the optimizer's own Variables (flax's Optimizer holds no model) with its step.
        A name (``"optimizer"``) is followed in IPython's user namespace like ``obj``'s, for a loop that
        rebinds both (``model, optimizer = nnx.merge(graphdef, state)``).
      updates: measure ‖θₜ − θₜ₋₁‖/‖θₜ₋₁‖ per Variable in a loop (``tick``/``track``): a tick's
        refresh keeps its parameter arrays until the next tick (one step's parameter memory, only
        after a refresh) and reduces the difference there on the device. ``False``: never held.
      layers: path prefix -> layer axis of stacked Variables (``{"blocks": 0}``, built with
        ``nnx.vmap``/``nnx.scan``): one row per layer under each. Axes flax recorded
        (``transform_metadata={nnx.PARTITION_NAME: "layers"}`` with sharding names) need no declaration.
      rows_first: show the rows at once and the statistics once their kernels have compiled and run,
        where the kernel takes widget messages from threads; the display is sent again, once, when they
        arrive, so the saved notebook's copy has them. ``None`` (default): for a model of more than
        :data:`~nnx_lab.widgets.viewer.ROWS_FIRST_ABOVE` Variables (whose first statistics take seconds in a new session);
        a smaller model's table is shown with its statistics, in one display (tools that ignore display
        updates, such as nbval, would keep the rows alone).

    Raises:
      TypeError: ``obj`` is not a model (nothing :func:`nnx_lab.snapshot` accepts), or a path that is
        no Orbax checkpoint (``CheckpointError``, one line).
      ValueError: ``max_rate`` or ``history`` out of range, ``obj`` a str that is no Python name, or a
        ``layers`` prefix with no Variable or no such axis.
      RuntimeError: ``obj`` is a name and no IPython shell is running.

    >>> from flax import nnx
    >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    >>> viewer = watch(model, display=False)
    >>> viewer
    StateViewer · Linear: 2 variables, 9 elements, 36 B on 1× ...
    >>> for step in viewer.track(range(3)):
    ...     viewer.log(loss=1.0 / (step + 1))
    >>> viewer.status["state"], viewer.watcher.scalars.latest("loss")
    ('live', (3, 0.3333333333333333))
    """
    from .viewer_checkpoint import CheckpointViewer, checkpoint_path, notebook_namespace

    path = checkpoint_path(obj, notebook_namespace())
    if path is not None:  # an Orbax checkpoint directory: the static table of its snapshot
        checkpoint = CheckpointViewer(path, stats=stats, rows_first=rows_first if display else False)
        return checkpoint.show() if display else checkpoint  # type: ignore[return-value]
    viewer = StateViewer(
        obj,
        max_rate=max_rate,
        background=background,
        stats=stats,
        history=history,
        optimizer=optimizer,
        updates=updates,
        layers=layers,
        rows_first=rows_first if display else False,
    )
    return viewer.show() if display else viewer
