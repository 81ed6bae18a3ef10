"""A view report as static text: the model's mode, then every module with ``set_view`` and the
arguments it takes, with their defaults and current values.

``report`` is a ``core.views.ViewReport``, read by attribute (``summary()``, ``modules``: each with
``path_text``, ``class_name``, ``mode``, ``args``), not imported: the views package renders itself
through this module.
"""

from __future__ import annotations

from typing import Any

from ..graph import path_text
from ..text import safe_repr


def _paths(paths: Any, shown: int = 3) -> str:
    text = ", ".join(path_text(p) for p in paths[:shown])
    return text + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def view_text(report: Any) -> str:
    """Plain text of ``report`` (a ViewReport): its summary line, one line per module, one per argument
    (``—`` when the instance has no attribute of that name)."""
    lines = [report.summary()]
    for m in report.modules:
        lines.append(f"  {m.path_text} ({m.class_name}){f': {m.mode}' if m.mode else ''}")
        if m.aliases:  # the same module reached by other paths (tied, or through a reference cycle)
            lines.append(f"    the same module as {_paths(m.aliases)}")
        for a in m.args:
            now = safe_repr(a.current, 200) if a.has_current else "—"
            lines.append(f"    {a.name}: {a.annotation} = {safe_repr(a.default, 200)}   now {now}")
    return "\n".join(lines)
