"""The split report widget: which Variables each filter of an ``nnx.split`` takes, shadows, misses."""

from __future__ import annotations

from typing import Any, Sequence

from ..core.split import SplitReport
from . import traits
from ._base import STATIC, Widget


class SplitReportView(Widget):
    """A :class:`~nnx_lab.core.split.SplitReport` as a table: one coloured column per filter.

    ``target`` is the expression the equivalent ``nnx.split`` line splits, ``names`` the names it
    binds (``graphdef`` first); by default ``graphdef`` and each filter's default name.
    """

    _esm = STATIC / "split.js"
    report = traits.Payload(traits.SplitReport).tag(sync=True)

    def __init__(
        self, report: SplitReport, *, target: str = "model", names: Sequence[str] | None = None, **kwargs: Any
    ):
        self._report = report
        self._target = target
        names = list(names) if names else ["graphdef", *(f.name for f in report.filters)]
        if len(names) != len(report.filters) + 1:
            raise ValueError(
                f"nnx.split with {len(report.filters)} filters returns {len(report.filters) + 1} "
                f"values (graphdef first), but {len(names)} names were given: {names}"
            )
        super().__init__(**kwargs)
        self._names = names
        self.report = {**report.to_dict(), "code": report.code(target, names), "names": names}

    @property
    def split_report(self) -> SplitReport:
        return self._report

    # -- what a saved notebook shows without a kernel ----------------------------------
    def _fallback(self) -> tuple[str, str]:
        return self._report.to_text(self._names), self._report.to_html(self._target, self._names)

    def __repr__(self) -> str:
        return f"SplitReportView · {self._report.to_text().splitlines()[0]}"
