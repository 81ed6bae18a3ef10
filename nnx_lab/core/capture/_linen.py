"""Linen inside ``nnx.bridge.ToNNX``: an armed ToNNX module is called without ``__captures__``
(Linen would take it for a collection) and what Linen sowed is captured."""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

from flax import nnx

from ._arming import ATTR, concat

_log = logging.getLogger("nnx_lab")

_MISSING = object()


# --------------------------------------------------------------------------- Linen via ToNNX


def tonnx_class() -> type | None:
    wrappers = sys.modules.get("flax.nnx.bridge.wrappers")
    return getattr(wrappers, "ToNNX", None)


def mutable_sows(mutable: Any) -> bool:  # the user's Linen filter, as given
    """Whether Linen's ``sow('intermediates', ...)`` stores anything under this ``mutable``
    (``True``, ``'intermediates'``, a list naming it, a DenyList without it)."""
    try:
        from flax.core.scope import in_filter

        return bool(in_filter(mutable, "intermediates"))
    except Exception:  # noqa: BLE001 - boundary: the user's filter, which Linen itself rejects and says why
        _log.debug("nnx_lab: mutable=%r not understood; Linen's sows not captured", mutable, exc_info=True)
        return False


def call_tonnx(module: nnx.Module, original: Callable, args: tuple, kwargs: dict, capture_linen: bool) -> Any:
    """Call an armed ToNNX module: without its ``__captures__`` (ToNNX hands every attribute to
    Linen as a collection and would reject it), and, when ``capture_linen``, sowing what Linen sowed.

    Without ``mutable``, the call runs with ``mutable=['intermediates']``; ToNNX stores the returned
    collection as attributes (merged into the parameter dicts of Linen submodules), and afterwards
    the module's attributes are put back exactly as they were (only intermediates could have
    changed). A call given ``mutable`` keeps its updates, as without a capture; when that ``mutable``
    lets Linen sow (``mutable=True``, as flax's bridge guide does), what this call appended to the
    stored intermediates is captured, not what earlier calls stored.
    """
    saved = dict(vars(module))
    del vars(module)[ATTR]  # plain dict edits: everything is back before anyone else looks
    kind = nnx.variablelib.variable_type_from_name("intermediates")
    if not capture_linen or kwargs.get("mutable") is not None:
        # The caller's own `mutable` collections (batch statistics) are updated as without capture.
        prior = (
            {key: _linen_values(value, kind) for key, value in saved.items() if key != ATTR} if capture_linen else {}
        )
        try:
            result = original(module, *args, **kwargs)
            after = dict(vars(module))
        finally:
            vars(module)[ATTR] = saved[ATTR]
        for key, value in after.items():
            if not capture_linen or key == ATTR:
                continue
            found = _appended(_linen_values(value, kind), prior.get(key, _MISSING))
            if found is not _MISSING:
                module.sow(nnx.Intermediate, key, found, reduce_fn=concat, init_fn=tuple)
        return result
    after: dict = {}
    try:
        result = original(module, *args, **{**kwargs, "mutable": ["intermediates"]})
        after = dict(vars(module))
    finally:
        current = vars(module)
        current.clear()
        current.update(saved)
    for key, value in after.items():
        if saved.get(key, _MISSING) is value:
            continue
        found = _linen_values(value, kind)
        if found is not _MISSING:
            module.sow(nnx.Intermediate, key, found, reduce_fn=concat, init_fn=tuple)
    return result


def _linen_values(value: Any, kind: type) -> object:  # value: an attribute ToNNX set (Linen's)
    """The values of the ``kind`` Variables in an attribute ToNNX set (nested dicts kept), or _MISSING."""
    if isinstance(value, nnx.Variable):
        return value.get_value() if type(value) is kind else _MISSING
    if isinstance(value, (dict, nnx.State)) or hasattr(value, "items"):
        out = {}
        for k, v in value.items():
            found = _linen_values(v, kind)
            if found is not _MISSING:
                out[k] = found
        return out or _MISSING
    return _MISSING


def _appended(found: object, prior: object) -> object:
    """What one call added to Linen's intermediates: ``found`` without the ``prior`` values it
    started from (Linen's sow appends to the stored tuple), or _MISSING when it added nothing.

    >>> _appended({"a": (1, 2), "b": (3,)}, {"a": (1,)}), _appended((1,), (1,)) is _MISSING, _appended((5,), _MISSING)
    ({'a': (2,), 'b': (3,)}, True, (5,))
    """
    if found is _MISSING or prior is _MISSING:
        return found
    if isinstance(found, dict) and isinstance(prior, dict):
        out = {k: _appended(v, prior.get(k, _MISSING)) for k, v in found.items()}
        return {k: v for k, v in out.items() if v is not _MISSING} or _MISSING
    if isinstance(found, tuple) and isinstance(prior, tuple):
        if len(found) < len(prior):  # not appended to: the call replaced the value
            return found
        return found[len(prior) :] or _MISSING
    return _MISSING if found is prior else found
