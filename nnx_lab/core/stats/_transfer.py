"""Small device results on their way to the host: started early, checked without waiting, fetched
in one transfer (see :mod:`._stats`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import jax

from ..text import one_line
from ._table import KERNEL_ERRORS, StatsError

if TYPE_CHECKING:
    from ._types import HostOutputs, Outputs

_log = logging.getLogger("nnx_lab")


def is_ready(result: Outputs | StatsError | None) -> bool:
    """Whether a device result (any pytree of arrays; None or a StatsError count as ready) has
    arrived, without waiting."""
    if result is None or isinstance(result, StatsError):
        return True
    try:
        return all(leaf.is_ready() for leaf in jax.tree.leaves(result))
    except (RuntimeError, AttributeError):  # deleted, or a backend without is_ready: fetching will say
        return True


def copy_to_host(results: list[Outputs]) -> None:
    """Start the small results' copies to the host now, so a later fetch does not wait for them."""
    for r in results:
        for leaf in jax.tree.leaves(r):
            try:
                leaf.copy_to_host_async()
            except (RuntimeError, ValueError, AttributeError):  # not fully addressable, or not supported: fetched later
                pass


def _host(result: object) -> object:
    """A device result on the host. A result replicated over several processes' devices is not
    fully addressable: every process holds the whole (small) value, so its local copy is read."""
    if jax.process_count() == 1:  # every array addressable here
        return result

    def one(leaf):
        if getattr(leaf, "is_fully_addressable", True):
            return leaf
        return leaf.addressable_data(0)

    return jax.tree.map(one, result)


def fetch(results: list[Outputs | StatsError]) -> list[HostOutputs | StatsError]:
    """The device results on the host, in one transfer; a failed one as a StatsError."""
    live = [j for j, r in enumerate(results) if not isinstance(r, StatsError)]
    try:
        got = jax.device_get([_host(results[j]) for j in live])
    except KERNEL_ERRORS:
        # One bad result must not hide the others: fetch them one by one to say which.
        got = []
        for j in live:
            try:
                got.append(jax.device_get(_host(results[j])))
            except KERNEL_ERRORS as e:  # its row says so
                _log.debug("nnx_lab: fetching a statistics result failed", exc_info=True)
                got.append(StatsError(one_line(e)))
    fetched = list(results)
    for j, g in zip(live, got):
        fetched[j] = g
    return fetched  # pyright: ignore[reportReturnType] - each live slot now holds its host copy (or its StatsError)
