"""What ``%load_ext nnx_lab`` adds to a shell, and how ``unload`` takes it away again."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

#: the magics class, by module and name: unload recognises it without importing it
MAGICS_CLASS = ("nnx_lab.magics", "NnxLabMagics")

#: what ``load`` says where there is no IPython shell (``get_ipython()`` is None: marimo, a script)
NO_IPYTHON = (
    "nnx_lab's magics (%nnx_watch, %nnx_summary, ...) are IPython's, and this is no IPython shell "
    "(marimo, a script): call the functions instead, e.g. nnx_lab.watch(model), nnx_lab.summary(model, x)"
)


def load(ipython: InteractiveShell | None) -> None:
    """Register the magics (one instance, also one of ``ipython.configurables``, so ``%config
    NnxLabMagics`` reaches it) and the cell hooks. No shell (marimo's ``get_ipython()``): one-line RuntimeError."""
    if ipython is None or not hasattr(ipython, "register_magics"):
        raise RuntimeError(NO_IPYTHON)
    from ..magics import NnxLabMagics
    from . import cell_hooks

    unload(ipython)  # loading twice (or %reload_ext) leaves exactly one copy
    ipython.register_magics(NnxLabMagics)
    cell_hooks.register_hooks(ipython)


def _is_ours(obj: object) -> bool:
    return (type(obj).__module__, type(obj).__name__) == MAGICS_CLASS


def unload(ipython: InteractiveShell) -> None:
    """Remove the magics and their configurable; the cell hooks too unless widgets on screen need them."""
    manager = ipython.magics_manager
    for table in manager.magics.values():
        for name, fn in list(table.items()):
            if _is_ours(getattr(fn, "__self__", None)):
                del table[name]
    manager.registry.pop(MAGICS_CLASS[1], None)
    configurables = getattr(ipython, "configurables", None)
    if configurables is not None:
        configurables[:] = [c for c in configurables if not _is_ours(c)]
    from . import cell_hooks

    cell_hooks.adopt(ipython)  # an earlier copy's widgets (the package imported again) count too
    if not cell_hooks.widgets(object):  # viewers on screen keep refreshing after cells, as without %load_ext
        cell_hooks.unregister_hooks(ipython)
