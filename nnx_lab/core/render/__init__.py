"""Every static text/HTML rendering, in one place: what a saved notebook shows without a kernel,
``repr`` and ``_repr_html_`` of snapshots, split reports, view reports and capture reports, and the
number, size and label rules the browser shares (``tools/js_constants.py`` reads them here).

Every user string is escaped in HTML. The feature objects keep their methods (``to_text()``,
``_repr_html_()`` ...) as one-line calls into this package; it reads them by attribute and never
imports the feature packages, so nothing here closes an import cycle.

- ``_format``: numbers, bytes, counts, shapes, statistic rounding, labels, filter colours,
  histograms as block characters;
- ``_snapshot``: snapshot tables, summary and memory lines, the NaN/Inf banner;
- ``_split``, ``_views``, ``_capture``: the split, view and capture reports;
- ``_memory``: the memory ledger and step plan (``nnx_lab.memory``).

>>> format_bytes(302_700_000)
'288.7 MiB'
"""

from ._capture import capture_html, capture_text
from ._format import (
    BYTE_UNITS,
    CELL_STYLE,
    DIGITS,
    FILTER_COLORS,
    NONFINITE_LABEL,
    SERIES_COLUMNS,
    SERIES_LABELS,
    STAT_COLUMNS,
    STAT_LABELS,
    count_noun,
    format_bytes,
    format_number,
    format_shape,
    format_stat,
    pre_html,
    round_significant,
    sparkline,
)
from ._memory import memory_html, memory_text, plan_html, plan_text, top_lines
from ._memory_payload import memory_payload
from ._snapshot import html_table, series_lines, summary_line, text_table
from ._split import split_html, split_text
from ._views import view_text

__all__ = [
    "BYTE_UNITS",
    "CELL_STYLE",
    "DIGITS",
    "FILTER_COLORS",
    "NONFINITE_LABEL",
    "SERIES_COLUMNS",
    "SERIES_LABELS",
    "STAT_COLUMNS",
    "STAT_LABELS",
    "capture_html",
    "capture_text",
    "count_noun",
    "format_bytes",
    "format_number",
    "format_shape",
    "format_stat",
    "html_table",
    "memory_html",
    "memory_payload",
    "memory_text",
    "plan_html",
    "plan_text",
    "pre_html",
    "series_lines",
    "round_significant",
    "sparkline",
    "split_html",
    "split_text",
    "summary_line",
    "text_table",
    "top_lines",
    "view_text",
]
