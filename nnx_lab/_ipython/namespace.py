"""The running IPython shell's user namespace, where ``watch("model")`` follows a name (outside
IPython, a one-line error: there is no namespace to follow a name in)."""

from __future__ import annotations

from typing import Any


def user_namespace(what: str) -> dict[str, Any]:
    """``get_ipython().user_ns``; outside IPython a one-line RuntimeError naming ``what`` was asked."""
    try:
        from IPython import get_ipython
    except ImportError:
        shell = None
    else:
        shell = get_ipython()
    if shell is None:
        raise RuntimeError(
            f"{what} follows a name in IPython's namespace, and no IPython shell is running; "
            "pass the model itself: watch(model)"
        )
    return shell.user_ns
