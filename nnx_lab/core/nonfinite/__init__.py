"""Non-finite forensics: which module call, and which primitive inside it, first made NaN or Inf.

What it does, step by step: docs/guide/nonfinite.md; the parts: docs/ARCHITECTURE.md.
"""

from ._report import DISPLAY_HOOKS, MARIMO_HOOKS, NonfiniteReport
from ._search import find_nonfinite

__all__ = ["DISPLAY_HOOKS", "MARIMO_HOOKS", "find_nonfinite", "NonfiniteReport"]
