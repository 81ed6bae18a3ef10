"""The running IPython shell's user namespace, where ``watch("model")`` follows a name (outside
IPython, a one-line error: there is no namespace to follow a name in)."""

from __future__ import annotations

from typing import Any

from ..core.shell import shell_namespace


def user_namespace(what: str) -> dict[str, Any]:
    """``get_ipython().user_ns``; outside IPython a one-line RuntimeError naming ``what`` was asked."""
    namespace = shell_namespace()
    if namespace is None:
        raise RuntimeError(
            f"{what} follows a name in IPython's namespace, and no IPython shell is running; "
            "pass the model itself: watch(model)"
        )
    return namespace
