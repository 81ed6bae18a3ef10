"""nnx_lab's IPython magics: one :class:`NnxLabMagics` whose magics live one family a module.

- ``_snapshot``: ``%nnx_snapshot``, ``%nnx_watch``;
- ``_split``: ``%nnx_split`` / ``%%nnx_split``;
- ``_views``: ``%nnx_mode``, ``%nnx_view``;
- ``_capture``: ``%%nnx_capture``;
- ``_args``: what they all use (line splitting, TARGET and ``--only`` evaluation, name and
  number checks, the cell-body runner).

User variables are read and written only through ``self.shell.user_ns``. The numeric options'
defaults are configurable as with any IPython configurable (``%config NnxLabMagics.max_rows = 50``,
or ``c.NnxLabMagics.max_rows = 50`` in ``ipython_config.py``); an option given on the line wins.
Importing this package does not import jax.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from traitlets import Float, Int, TraitError, validate

from ..core._util import MAX_BINS, MAX_RATE, MAX_ROWS, check_number
from ._args import DEFAULT_BINS, DEFAULT_MAX_ROWS, DEFAULT_RATE
from ._capture import nnx_capture
from ._snapshot import nnx_snapshot, nnx_watch
from ._split import nnx_split
from ._views import nnx_mode, nnx_view

__all__ = ["NnxLabMagics"]


def _in_bounds(proposal: Any, low: float, high: float, **kwargs: Any) -> Any:
    """A configured default, checked as its option is (``core._util.check_number``)."""
    name = f"NnxLabMagics.{proposal['trait'].name}"
    try:
        return check_number(proposal["value"], name, low, high, **kwargs)
    except ValueError as e:
        raise TraitError(str(e)) from None


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

    max_rows = Int(DEFAULT_MAX_ROWS, help=f"%nnx_snapshot: rows shown in the table when --max-rows is not "
                                          f"given, 1..{MAX_ROWS}").tag(config=True)
    rate = Float(DEFAULT_RATE, help=f"%nnx_watch: most refreshes per second when --rate is not given, "
                                    f"in (0, {MAX_RATE:g}]").tag(config=True)
    bins = Int(DEFAULT_BINS, help=f"%%nnx_capture: histogram bins per captured array when --bins is not "
                                  f"given, 1..{MAX_BINS}").tag(config=True)

    @validate("max_rows")
    def _valid_max_rows(self, proposal: Any) -> int:
        return _in_bounds(proposal, 1, MAX_ROWS, integer=True)

    @validate("rate")
    def _valid_rate(self, proposal: Any) -> float:
        return _in_bounds(proposal, 0, MAX_RATE, low_open=True)

    @validate("bins")
    def _valid_bins(self, proposal: Any) -> int:
        return _in_bounds(proposal, 1, MAX_BINS, integer=True)

    # Each magic is a function of its family's module (with its arguments and help), made a method here.
    nnx_snapshot = line_magic(nnx_snapshot)
    nnx_watch = line_magic(nnx_watch)
    nnx_split = line_cell_magic(nnx_split)
    nnx_mode = line_magic(nnx_mode)
    nnx_view = line_magic(nnx_view)
    nnx_capture = cell_magic(nnx_capture)
