"""``nnx_lab.summary(model, *args)``: what each module of a model takes, gives and costs, from one trace.

How it works: docs/guide/summary.md and docs/ARCHITECTURE.md ("A summary is one trace, costed per
equation"); the model is never changed.
"""

from ._build import summary
from ._data import DISPLAY_HOOKS, MARIMO_HOOKS, RNG_MARK, Summary, SummaryError, SummaryRow, rng_flops_text
from ._formats import bytes_text, count_text, variables_text

__all__ = [
    "DISPLAY_HOOKS",
    "MARIMO_HOOKS",
    "RNG_MARK",
    "Summary",
    "SummaryError",
    "SummaryRow",
    "bytes_text",
    "count_text",
    "rng_flops_text",
    "summary",
    "variables_text",
]
