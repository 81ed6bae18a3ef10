"""nnx_lab's IPython magics: one :class:`NnxLabMagics` whose magics live one family a module.

- ``_snapshot``: ``%nnx_snapshot``, ``%nnx_watch``;
- ``_split``: ``%nnx_split`` / ``%%nnx_split``;
- ``_views``: ``%nnx_mode``, ``%nnx_view``;
- ``_capture``: ``%%nnx_capture``;
- ``_summary``: ``%nnx_summary``;
- ``_compare``: ``%nnx_compare``;
- ``_memory``: ``%nnx_memory``;
- ``_nonfinite``: ``%%nnx_nonfinite``;
- ``_args``: what they all use (line splitting, TARGET and ``--only`` evaluation, name and
  number checks, the cell-body runner).

User variables are read and written only through ``self.shell.user_ns``. The numeric options'
defaults are configurable as with any IPython configurable (``%config NnxLabMagics.max_rows = 50``,
or ``c.NnxLabMagics.max_rows = 50`` in ``ipython_config.py``); an option given on the line wins.
A value out of bounds (or of the wrong kind: ``True``, ``'fast'``) is refused: ``%config`` says so
and the default stays; one in a config file, or one ``%config`` refused (IPython keeps it in
``shell.config`` all the same), is said once as a warning when the magics load, and they load
with the default. Importing this package does not import jax.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from traitlets import Float, HasTraits, Int, TraitError, TraitType
from traitlets.config.loader import Config, DeferredConfig, LazyConfigValue

from ..core.checks import MAX_BINS, MAX_RATE, MAX_ROWS, check_number
from ..core.text import quote_repr
from ._args import DEFAULT_BINS, DEFAULT_MAX_ROWS, DEFAULT_RATE
from ._capture import nnx_capture
from ._compare import nnx_compare
from ._memory import nnx_memory
from ._nonfinite import nnx_nonfinite
from ._snapshot import nnx_snapshot, nnx_watch
from ._split import nnx_split
from ._summary import nnx_summary
from ._views import nnx_mode, nnx_view

__all__ = ["NnxLabMagics"]


if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    class _Trait(TraitType):
        """What _Bounded is mixed into, for the checker: a TraitType with a validate (Int, Float)."""

        def validate(self, obj: HasTraits, value: object) -> float: ...

else:
    _Trait = object


class _Bounded(_Trait):
    """A configurable number checked as its option is (``core.checks.check_number``) on the value as
    given, before traitlets converts it (``Float`` would take ``True`` as 1.0)."""

    def __init__(self, default: float, low: float, high: float, help: str, **kwargs: bool):
        super().__init__(default, help=help)
        self._bounds = (low, high, kwargs)

    def validate(self, obj: HasTraits, value: object) -> float:
        low, high, kwargs = self._bounds
        try:
            check_number(value, f"NnxLabMagics.{self.name}", low, high, **kwargs)
        except ValueError as e:
            raise TraitError(str(e)) from None
        return super().validate(obj, value)


class _BoundedInt(_Bounded, Int):
    pass


class _BoundedFloat(_Bounded, Float):
    pass


_warned: set = set()  # (option, value) pairs already said at load: %reload_ext says each once


@magics_class
class NnxLabMagics(Magics):
    """``%nnx_snapshot``, ``%nnx_watch``, ``%nnx_split``, ``%nnx_mode``, ``%nnx_view``, ``%%nnx_capture``.

    >>> from IPython.core.interactiveshell import InteractiveShell
    >>> magics = NnxLabMagics(shell=InteractiveShell.instance())
    >>> magics.max_rows, magics.rate, magics.bins
    (200, 2.0, 16)
    >>> magics.max_rows = 0
    Traceback (most recent call last):
    ...
    traitlets.traitlets.TraitError: NnxLabMagics.max_rows must be an integer in [1, 1000000], got 0
    >>> magics.shell.configurables.remove(magics)
    """

    max_rows = _BoundedInt(
        DEFAULT_MAX_ROWS,
        1,
        MAX_ROWS,
        integer=True,
        help=f"%nnx_snapshot: rows shown in the table when --max-rows is not given, 1..{MAX_ROWS}",
    ).tag(config=True)
    rate = _BoundedFloat(
        DEFAULT_RATE,
        0,
        MAX_RATE,
        low_open=True,
        help=f"%nnx_watch: most refreshes per second when --rate is not given, in (0, {MAX_RATE:g}]",
    ).tag(config=True)
    bins = _BoundedInt(
        DEFAULT_BINS,
        1,
        MAX_BINS,
        integer=True,
        help=f"%%nnx_capture: histogram bins per captured array when --bins is not given, 1..{MAX_BINS}",
    ).tag(config=True)

    def __init__(self, shell: InteractiveShell | None = None, **kwargs: Any):
        self._loading = True  # the config read while constructing: a bad value warns, the default stays
        try:
            super().__init__(shell=shell, **kwargs)
        finally:
            self._loading = False

    def _load_config(
        self,
        cfg: Config,
        section_names: list[str] | None = None,
        traits: dict[str, TraitType[Any, Any]] | None = None,
    ) -> None:
        """traitlets' loading; while the magics load (``%load_ext``, ``%reload_ext``), a refused value
        is a warning (once per value) and its default stays, never a traceback that leaves no magic
        registered. ``%config`` afterwards raises as traitlets does (IPython reports it)."""
        if not getattr(self, "_loading", False):
            return super()._load_config(cfg, section_names, traits)
        try:
            return super()._load_config(cfg, section_names, traits)
        except Exception:  # noqa: BLE001 - boundary: traitlets set nothing of that batch: each value on its own
            logging.getLogger("nnx_lab").debug("nnx_lab: config refused as a batch; value by value", exc_info=True)
        traits = self.traits(config=True) if traits is None else traits
        for name, value in self._find_my_config(cfg).items():
            if name not in traits:
                continue  # traitlets said "not recognized" already
            try:
                if isinstance(value, LazyConfigValue):
                    value = value.get_value(getattr(self, name))
                elif isinstance(value, DeferredConfig):  # from the command line: parsed by the trait
                    value = value.get_value(traits[name])
                setattr(self, name, copy.deepcopy(value))
            except Exception as e:  # noqa: BLE001 - a bad value in the user's config: said, default kept
                key = (name, quote_repr(value, 60))
                if key not in _warned:
                    _warned.add(key)
                    message = str(e) if isinstance(e, TraitError) else f"NnxLabMagics.{name}: {e}"
                    logging.getLogger("nnx_lab").warning(
                        "%s: refused, the default %r stays", message, traits[name].default_value
                    )

    # Each magic is a function of its family's module (with its arguments and help), made a method here.
    nnx_snapshot = line_magic(nnx_snapshot)
    nnx_watch = line_magic(nnx_watch)
    nnx_split = line_cell_magic(nnx_split)
    nnx_mode = line_magic(nnx_mode)
    nnx_view = line_magic(nnx_view)
    nnx_capture = cell_magic(nnx_capture)
    nnx_summary = line_magic(nnx_summary)
    nnx_compare = line_magic(nnx_compare)
    nnx_memory = line_magic(nnx_memory)
    nnx_nonfinite = cell_magic(nnx_nonfinite)
