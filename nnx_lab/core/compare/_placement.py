"""Where a compared pair's arrays go: both on the devices of the one on a device, PRNG keys as their
key data, pairs grouped by devices (one program per group)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["group_key", "key_data", "placed_pair"]


def placed_pair(a: Any, b: Any) -> tuple[Any, Any]:
    """Both arrays on the devices of the one that is on a device (b follows a's sharding)."""
    a, b = key_data(a), key_data(b)
    if isinstance(a, jax.Array):
        if not isinstance(b, jax.Array) or b.sharding != a.sharding:
            b = jax.device_put(b, a.sharding)
        return a, b
    if isinstance(b, jax.Array):
        return jax.device_put(a, b.sharding), b
    return jnp.asarray(a), jnp.asarray(b)


def key_data(x: Any) -> Any:
    """A PRNG key array's key data (compared bit for bit); any other array as it is."""
    return jax.random.key_data(x) if _is_key(x.dtype) else x


_key_dtypes: dict = {}  # dtype -> whether it is a PRNG key's: asked per array, decided per dtype


def _is_key(dtype: Any) -> bool:
    try:
        known = _key_dtypes.get(dtype)
    except TypeError:  # an unhashable extended dtype: decided each time
        return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
    if known is None:
        known = _key_dtypes[dtype] = jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
    return known


_groups: dict = {}  # sharding -> its devices' ids (a few shardings per model, asked per array)


def group_key(x: jax.Array) -> tuple:
    sharding = x.sharding
    try:
        return _groups[sharding]
    except KeyError:
        if len(_groups) > 256:
            _groups.clear()
        key = _groups[sharding] = tuple(sorted(d.id for d in sharding.device_set))
        return key
    except TypeError:  # an unhashable sharding
        return tuple(sorted(d.id for d in sharding.device_set))
