"""What ``%%nnx_capture`` shows: a capture report drawn by the capture panel's front end (a tree
of modules and values, statistics, an on-device histogram per value, gradient columns beside the
values they belong to), without the panel's toggles.

The widget keeps only the report's JSON payload and its static text and HTML (for a notebook
saved or opened without a kernel): no array, so it holds no device memory.
"""

from __future__ import annotations

from typing import Any

import traitlets

from ..core.capture import CaptureReport
from ..core.graph import Path
from . import traits
from ._base import STATIC, Widget


class CaptureReportView(Widget):
    """A :class:`~nnx_lab.core.capture.CaptureReport` as a read-only capture table.

    ``target`` names the model in the head line, ``classes`` (module path -> class name) labels
    the module rows, ``elapsed`` is how long the captured code ran, in seconds.
    """

    _esm = STATIC / "capture.js"
    variant = traitlets.Unicode("report").tag(sync=True)
    controls = traits.Payload(traits.CaptureControls).tag(sync=True)
    status = traits.Payload(traits.CaptureStatus).tag(sync=True)
    report = traits.Payload(traits.CaptureReport).tag(sync=True)

    def __init__(
        self,
        report: CaptureReport,
        *,
        target: str = "model",
        classes: dict[Path, str] | None = None,
        elapsed: float | None = None,
        **kwargs: Any,
    ):
        status: dict[str, Any] = {"target": target, "message": "", "level": ""}
        if elapsed is not None:
            status["elapsed_ms"] = round(elapsed * 1000, 1)
        super().__init__(report=report.to_dict(classes=classes), status=status, **kwargs)
        self._text, self._html = report.to_text(), report.to_html()

    def _fallback(self) -> tuple[str, str]:
        return self._text, self._html

    def __repr__(self) -> str:
        return self._text
