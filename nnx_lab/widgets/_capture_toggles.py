"""The capture panel's toggles read and set from Python (``panel.types``, ``panel.methods``,
``panel.modules``): the same as clicking them, and shown at once."""

from __future__ import annotations

from typing import Any, Callable

from flax import nnx

from ..core import capture as core
from ..core.capture import CaptureToggles, Modules, caller_namespace
from ..core.graph import path_text


class ToggleProperties:
    """For :class:`~nnx_lab.widgets.capture.CapturePanel`: its ``_toggles`` (CaptureToggles) as properties;
    each change is published with ``_publish_controls`` (over ``_module_list()``)."""

    _toggles: CaptureToggles
    _publish_controls: Callable[..., None]
    _module_list: Callable[[], Modules]

    @property
    def types(self) -> tuple[type[nnx.Variable], ...]:
        """The Variable types collected on the next call (display order)."""
        return self._toggles.types

    @types.setter
    def types(self, spec: Any) -> None:
        self._toggles.set_types(core.resolve_types(spec, caller_namespace(1, spec)))
        self._publish_controls()

    @property
    def methods(self) -> bool:
        """Whether the next call records every method's output (``nnx.capture``'s ``method_outputs``)."""
        return self._toggles.methods

    @methods.setter
    def methods(self, value: bool) -> None:
        self._toggles.methods = value
        self._publish_controls()

    @property
    def modules(self) -> tuple[str, ...]:
        """Paths of the submodules whose values the next call captures ('' is the model itself).

        Set it to a path or a list of paths (``"blocks[1]"``, ``"blocks/1"``, a key tuple): each
        module given and everything under it, as ticking its checkbox does.
        """
        return tuple(path_text(p) for p in self._toggles.ticked(self._module_list()))

    @modules.setter
    def modules(self, paths: Any) -> None:
        modules = self._module_list()
        self._toggles.select(paths, modules)
        self._publish_controls(modules)
