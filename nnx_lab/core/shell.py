"""The running IPython shell's user namespace, without importing IPython (core stays UI-free: a
script that never imported IPython has no shell, and importing it here would cost it a second)."""

from __future__ import annotations

import sys


def shell_namespace() -> dict | None:
    """``get_ipython().user_ns`` when an IPython shell is running, else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    namespace = getattr(shell, "user_ns", None)
    return namespace if isinstance(namespace, dict) else None
