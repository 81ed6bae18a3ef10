"""The ledger's plain data: rows (holder × group × device), device totals, freeing statements."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from ..offers import offer
from ..render import memory_html, memory_text, top_lines

if TYPE_CHECKING:
    import pandas as pd

#: Functions ``ledger -> mimebundle | None`` asked, in order, when a Ledger is displayed (the widget
#: in a Jupyter kernel: ``nnx_lab.widgets.memory`` adds one); none answering: its text and HTML.
DISPLAY_HOOKS: list = []
#: Functions ``ledger -> zero-argument callable returning the object to show | None``, asked when marimo
#: displays a Ledger (its ``_display_`` protocol; ``nnx_lab.widgets.memory`` adds the widget's).
MARIMO_HOOKS: list = []


class PrettyPrinter(Protocol):
    """What ``_repr_pretty_`` is given (IPython's ``PrettyPrinter``; core imports no IPython)."""

    def text(self, obj: str) -> None: ...


@dataclass(frozen=True)
class Row:
    """The arrays one holder's group keeps on one device: ``arrays``/``bytes`` counted here,
    ``shared_arrays``/``shared_bytes`` reached here but counted under the holder named first in
    ``shared_with`` (a buffer is counted once)."""

    holder: str
    kind: str
    group: str
    device: str
    arrays: int
    bytes: int
    shared_arrays: int = 0
    shared_bytes: int = 0
    shared_with: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class DeviceTotal:
    """One device: its live buffers' count and bytes, the ledger's total (always equal: every live
    buffer has one row), and ``memory_stats()`` where the backend has it (else ``{}``)."""

    device: str
    id: int
    arrays: int
    live_bytes: int
    ledger_bytes: int
    stats: dict = field(default_factory=dict)

    @property
    def not_in_arrays(self) -> int | None:
        """Bytes the allocator has in use beyond the live arrays (XLA's temporaries, fragmentation)."""
        in_use = self.stats.get("bytes_in_use")
        return None if in_use is None else in_use - self.ledger_bytes


@dataclass(frozen=True)
class Freeing:
    """Dropping ``holders`` (``statement``) returns ``bytes``: the buffers only they reach."""

    holders: tuple[str, ...]
    statement: str
    bytes: int


@dataclass(frozen=True)
class Ledger:
    """Every live jax array by holder and device (``nnx_lab.memory()``). Holds no array.

    ``rows``: one per holder × group (Variable type, optimizer entry, ``array``) × device;
    ``devices``: per-device totals; ``freeing``: the statements that would free the most, biggest
    first (nnx_lab never frees anything itself); ``holders``: the names walked, in order.
    """

    rows: tuple[Row, ...]
    devices: tuple[DeviceTotal, ...]
    freeing: tuple[Freeing, ...]
    holders: tuple[str, ...]
    top: int = 10
    note: str = ""  # said above the table: no namespace was walked

    def total(self, device: str | None = None) -> int:
        return sum(r.bytes for r in self.rows if device is None or r.device == device)

    def holder_bytes(self, name: str) -> int:
        """Bytes counted under ``name`` on every device."""
        return sum(r.bytes for r in self.rows if r.holder == name)

    def select(
        self, names: Iterable[str] | None = None, *, device: int | None = None, top: int | None = None
    ) -> Ledger:
        """The same ledger restricted to holders ``names`` (their aliases: ``Out[3]``), device id
        ``device``, and ``top`` holders shown; totals stay those of the whole device."""
        rows, devices, freeing = self.rows, self.devices, self.freeing
        if names is not None:
            wanted = set(names)
            rows = tuple(r for r in rows if r.holder in wanted)
            freeing = tuple(f for f in freeing if wanted & set(f.holders))
        if device is not None:
            devices = tuple(d for d in devices if d.id == device)
            shown = {d.device for d in devices}
            rows = tuple(r for r in rows if r.device in shown)
        return replace(self, rows=rows, devices=devices, freeing=freeing, top=self.top if top is None else top)

    def to_text(self, top: int | None = None) -> str:
        return memory_text(self, self.top if top is None else top)

    def top_text(self, top: int = 5) -> str:
        """The biggest holders and the statements that free them, in a few lines (the OOM hook's)."""
        return top_lines(self, top)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_pretty_(self, p: PrettyPrinter, cycle: bool) -> None:
        p.text(self.to_text())

    def _repr_html_(self) -> str:
        return memory_html(self, self.top)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict | None:
        """The widget where a hook offers one (a Jupyter kernel), else None: IPython then asks
        ``_repr_pretty_`` (the text) and ``_repr_html_`` (the static table)."""
        return offer(DISPLAY_HOOKS, self) or None

    @property
    def _display_(self) -> Callable[[], object] | None:
        """marimo's display protocol: what a hook offers (the widget, which marimo shows through its
        anywidget support), else None: marimo then shows ``_repr_html_``."""
        return offer(MARIMO_HOOKS, self)

    def to_dict(self) -> dict:
        return {
            "devices": [{**asdict(d), "not_in_arrays": d.not_in_arrays} for d in self.devices],
            "rows": [{**asdict(r), "shared_with": list(r.shared_with)} for r in self.rows],
            "freeing": [{**asdict(f), "holders": list(f.holders)} for f in self.freeing],
        }

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame (pandas is optional)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.to_dict()["rows"])
