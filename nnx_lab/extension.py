"""What ``%load_ext nnx_lab`` adds to a shell, and how ``unload`` takes it away again."""

from __future__ import annotations

from typing import Any


def load(ipython: Any) -> None:
    from . import live
    from .magics import NnxLabMagics

    unload(ipython)  # loading twice (or %reload_ext) leaves exactly one copy
    ipython.register_magics(NnxLabMagics)
    live.register_hooks(ipython)


def unload(ipython: Any) -> None:
    manager = ipython.magics_manager
    for kind, table in manager.magics.items():
        for name, fn in list(table.items()):
            owner = getattr(fn, "__self__", None)
            if type(owner).__name__ == "NnxLabMagics" and type(owner).__module__ == "nnx_lab.magics":
                del table[name]
    manager.registry.pop("NnxLabMagics", None)
    from . import live

    if not live.widgets(object):  # viewers on screen keep refreshing after cells, as without %load_ext
        live.unregister_hooks(ipython)
