"""The live ledger: every live jax array, counted per device by its addressable shards, under the
holder that reaches it first (:mod:`._holders`); what no name reaches is "(unreached)".

A buffer is identified by ``(device id, shard.unsafe_buffer_pointer())`` where the backend gives a
pointer (two Array objects over one buffer count once), else by its Array object. Nothing here
allocates on a device or frees anything.
"""

from __future__ import annotations

import logging
from collections import defaultdict

import jax
import jax.numpy as jnp

from .._gc import paused_gc
from ..compat import Device
from ..render import format_bytes
from ._data import DeviceTotal, Freeing, Ledger, Row
from ._holders import OUTPUT, UNREACHED, holders

_log = logging.getLogger("nnx_lab")

UNREACHED_NAME = "(unreached)"
UNREACHED_NOTE = (
    "no name reaches these: a jit-compiled function's captured constant, an array held by a closure, by "
    "an object outside the namespace or deeper than a named object's attributes, or a deleted model kept "
    "by a reference cycle until the collector "
    "runs (gc.collect()); a donated or deleted buffer is not live and is not counted"
)


def device_name(device: Device) -> str:
    return f"{device.platform}:{device.id}"


def _buffers(array: jax.Array, single: dict | None = None) -> list[tuple[tuple, Device, int]]:
    """``[(key, device, bytes)]``: one per addressable shard of ``array`` ([] when deleted).
    ``single`` caches, per sharding, its one device (None when several or not all addressable)."""
    try:
        if array.is_deleted():
            return []
        sharding = array.sharding
        if single is None:
            single = {}
        try:
            device = single[sharding]
        except KeyError:
            devices = sharding.device_set
            device = next(iter(devices)) if len(devices) == 1 and sharding.is_fully_addressable else None
            single[sharding] = device
        if device is not None:  # the common case, without Shard objects
            return [(_key(device, array), device, _nbytes(array))]
        out = []
        for shard in array.addressable_shards:
            data = shard.data
            out.append((_key(shard.device, data), shard.device, _nbytes(data)))
        return out
    except Exception as e:  # noqa: BLE001 - an array deleted meanwhile (another thread donated it)
        _log.debug("nnx_lab.memory: an array could not be read (%s)", e)
        return []


def _nbytes(array: jax.Array) -> int:
    """``array.nbytes`` without jax's ``size`` property (50 µs an array on jax 0.10's CPU arrays)."""
    n = array.dtype.itemsize
    for d in array.shape:
        n *= d
    return int(n)


def _base(array: jax.Array) -> jax.Array:
    """A typed PRNG key array's uint32 data (the buffer jax.live_arrays() lists), else ``array``."""
    if jnp.issubdtype(array.dtype, jax.dtypes.prng_key):
        try:
            return jax.random.key_data(array)
        except Exception:  # noqa: BLE001 - a deleted key: nothing to count
            return array
    return array


def _key(device: Device, data: jax.Array) -> tuple:
    try:
        return (device.id, data.unsafe_buffer_pointer())
    except Exception:  # noqa: BLE001 - a backend without pointers: the Array object is the buffer
        return (device.id, "id", id(data))


def memory_stats(device: Device) -> dict:
    try:
        stats = device.memory_stats()
    except Exception as e:  # noqa: BLE001 - a backend without statistics: said as such
        _log.debug("nnx_lab.memory: %s has no memory_stats (%s)", device, e)
        return {}
    if not stats:
        return {}
    keys = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")
    return {k: int(stats[k]) for k in keys if stats.get(k) is not None}


@paused_gc()  # thousands of short-lived tuples: the collector's passes over a large heap cost more than the walk
def build_ledger(namespace: dict | None) -> Ledger:
    """The ledger of every live array now, grouped by ``namespace``'s holders."""
    live = [a for a in jax.live_arrays()]
    by_id: dict[int, list] = {}
    buffers: dict[tuple, tuple[Device, int]] = {}  # key -> (device, bytes), in live order
    single: dict = {}
    for array in live:
        parts = _buffers(array, single)
        by_id[id(array)] = parts
        for key, device, nbytes in parts:
            buffers.setdefault(key, (device, nbytes))
    found = holders(namespace or {})
    owner: dict[tuple, tuple[int, str]] = {}  # key -> (holder index, group) that counts it
    extra: dict[tuple, list[int]] = {}  # key -> the later holders that reach it too
    counted: dict[tuple, list] = {}  # (i, group, device id) -> [arrays, bytes, shared arrays, shared bytes, names]
    for i, holder in enumerate(found):
        seen: set = set()
        last: tuple | None = None
        cell: list = []  # the counts of (group, device) last: set at the first array (last is None then)
        for group, array in holder.arrays:
            parts = by_id.get(id(array))
            if parts is None:  # an object over a live buffer (a typed PRNG key over its uint32 data)
                parts = by_id[id(array)] = _buffers(_base(array))
            for key, device, nbytes in parts:
                if key in seen:
                    continue
                seen.add(key)
                if last != (group, device.id):
                    last = (group, device.id)
                    cell = counted.setdefault((i, group, device.id), [0, 0, 0, 0, set()])
                first = owner.setdefault(key, (i, group))
                if first[0] == i:
                    cell[0] += 1
                    cell[1] += nbytes
                else:
                    cell[2] += 1
                    cell[3] += nbytes
                    cell[4].add(found[first[0]].name)
                    extra.setdefault(key, []).append(i)
        holder.arrays = []  # the ledger keeps no array
    for key, later in extra.items():  # the first holder of a shared buffer names the later ones too
        i, group = owner[key]
        counted[(i, group, buffers[key][0].id)][4].update(found[j].name for j in later)
    devices_by_id = {}
    unreached: dict[int, list] = defaultdict(lambda: [0, 0, defaultdict(lambda: [0, 0])])
    for key, (device, nbytes) in buffers.items():
        devices_by_id[device.id] = device
        if key not in owner:
            cell = unreached[device.id]
            cell[0] += 1
            cell[1] += nbytes
    for array in live:
        parts = by_id.get(id(array), ())
        if parts and all(key not in owner for key, _, _ in parts):
            for _, device, nbytes in parts:
                shape = unreached[device.id][2][f"{array.dtype}{list(array.shape)}"]
                shape[0] += 1
                shape[1] += nbytes
    rows = []
    for (i, group, dev), (n, nbytes, ns, sbytes, names) in counted.items():
        holder = found[i]
        rows.append(
            Row(
                holder.name,
                holder.kind,
                group,
                device_name(devices_by_id[dev]),
                n,
                nbytes,
                ns,
                sbytes,
                tuple(sorted(names - {holder.name})),
            )
        )
    for dev, (n, nbytes, shapes) in unreached.items():
        largest = sorted(shapes.items(), key=lambda kv: (-kv[1][1], kv[0]))[:3]
        note = UNREACHED_NOTE + (
            "; largest: " + ", ".join(f"{s} x{c} ({format_bytes(b)})" for s, (c, b) in largest) if largest else ""
        )
        rows.append(Row(UNREACHED_NAME, UNREACHED, "array", device_name(devices_by_id[dev]), n, nbytes, 0, 0, (), note))
    totals = []
    for dev_id in sorted(devices_by_id):
        device = devices_by_id[dev_id]
        name = device_name(device)
        live_bytes = sum(nb for (d, nb) in buffers.values() if d.id == dev_id)
        count = sum(1 for (d, _) in buffers.values() if d.id == dev_id)
        ledger_bytes = sum(r.bytes for r in rows if r.device == name)
        totals.append(DeviceTotal(name, dev_id, count, live_bytes, ledger_bytes, memory_stats(device)))
    freeing = _freeing(found, owner, extra, buffers)
    del live, by_id
    return Ledger(tuple(rows), tuple(totals), tuple(freeing), tuple(h.name for h in found))


def _freeing(found: list, owner: dict, extra: dict, buffers: dict) -> list[Freeing]:
    """What each set of holders would return if all of them were dropped: the buffers exactly that set
    reaches (a buffer two names reach is returned only by dropping both)."""
    by_set: dict[tuple, int] = defaultdict(int)
    output_only = 0
    outputs = {i for i, h in enumerate(found) if h.kind == OUTPUT}
    for key, (i, _) in owner.items():
        nbytes = buffers[key][1]
        later = extra.get(key)
        idx = (i, *later) if later else (i,)
        by_set[idx] += nbytes
        if i in outputs and (not later or outputs.issuperset(later)):
            output_only += nbytes
    out = []
    for idx, nbytes in by_set.items():
        statements = []
        for i in idx:
            if found[i].statement not in statements:
                statements.append(found[i].statement)
        if len(statements) > 1:  # a magic after `;` is not IPython syntax: its Python form
            statements = [_python_form(st) for st in statements]
        names = tuple(found[i].name for i in idx)
        out.append(Freeing(names, "; ".join(statements), nbytes))
    if len(outputs) > 1 and output_only:  # each output's own statement (`%reset -f out` leaves IPython's hidden copies)
        statements = list(dict.fromkeys(_python_form(found[i].statement) for i in sorted(outputs)))
        out.append(Freeing(("the output cache",), "; ".join(statements), output_only))
    out.sort(key=lambda f: -f.bytes)
    return out


def _python_form(statement: str) -> str:
    """``%xdel _3`` -> ``get_ipython().run_line_magic('xdel', '_3')``; any other statement as it is."""
    if not statement.startswith("%"):
        return statement
    magic, _, line = statement[1:].partition(" ")
    return f"get_ipython().run_line_magic({magic!r}, {line!r})"
