"""Display hooks: how core's results (a Summary, a Comparison, a memory Ledger, a NonfiniteReport)
show a widget that core does not know. The widgets package appends a hook to a result type's list
(``DISPLAY_HOOKS`` for IPython's ``_ipython_display_``, ``MARIMO_HOOKS`` for marimo's
``_display_``); the result asks its hooks in order and takes the first offer.

>>> offer([lambda obj: None, lambda obj: f"widget of {obj}"], "x")
'widget of x'
>>> offer([], "x") is None
True
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

__all__ = ["offer"]


def offer(hooks: Iterable[Callable[[Any], Any]], obj: Any) -> Any:
    """The first of ``hooks``' answers for ``obj`` that is not None, else None."""
    for hook in hooks:
        found = hook(obj)
        if found is not None:
            return found
    return None
