"""An Orbax checkpoint's tree, read from its metadata without restoring any array.

What ``ocp.StandardCheckpointer().save(path, nnx.state(model))`` (flax's checkpointing guide)
writes: ``_METADATA`` (the tree), per-array zarr metadata and the data, usually in one OCDBT
database (``manifest.ocdbt``, ``d/``). No array data is read.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import cast

import numpy as np

from ..graph import Path
from ..text import first_line

__all__ = [
    "CheckpointEntry",
    "CheckpointError",
    "CheckpointTree",
    "read_tree",
    "spec",
]

_log = logging.getLogger("nnx_lab")


class CheckpointError(TypeError, ValueError):
    """A path that is not a readable Orbax checkpoint (said in one line; a TypeError too, as any
    other object snapshot() cannot read)."""


@dataclasses.dataclass(frozen=True)
class CheckpointEntry:
    """One array of a checkpoint, as its metadata describes it."""

    path: Path  # as in the model: ``nnx.state``'s trailing ``value`` key dropped
    name: str  # Orbax's parameter name: the array's key in the checkpoint's store
    shape: tuple[int, ...] | None
    dtype: str | None
    sharding: str | None
    note: str | None = None  # why the entry cannot be read (its metadata is gone or corrupt: no shape/dtype)
    chunk_shape: tuple[int, ...] | None = None  # the stored (zarr) chunk: the unit tensorstore decodes
    key_impl: str | None = None  # a PRNG key's data: its impl (``threefry2x32``), as Orbax records it

    @property
    def size(self) -> int | None:
        return None if self.shape is None else int(np.prod(self.shape, dtype=np.int64))

    @property
    def array_shape(self) -> tuple[int, ...]:
        """The shape of an entry that can be read (``note`` None: its metadata gave one)."""
        if self.shape is None:
            raise ValueError(f"{self.name}: the checkpoint's metadata gives no shape ({self.note})")
        return self.shape

    @property
    def nbytes(self) -> int | None:
        if self.size is None or self.dtype is None:
            return None
        try:
            return self.size * np.dtype(self.dtype).itemsize
        except TypeError:
            return None


@dataclasses.dataclass(frozen=True)
class CheckpointTree:
    directory: str
    entries: list[CheckpointEntry]
    use_ocdbt: bool
    use_zarr3: bool
    disk_bytes: int  # every file under the directory


def _disk_bytes(directory: str) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:  # a file removed while we walk: counted as absent
                pass
    return total


def read_tree(path: str | os.PathLike[str]) -> CheckpointTree:
    """The checkpoint's arrays from its metadata; a :class:`CheckpointError` if there is no checkpoint."""
    directory = os.path.abspath(os.fspath(path))
    if not os.path.isdir(directory):
        raise CheckpointError(
            "expected an nnx.Module, an nnx.State, a nested dict of Variables or arrays, a Variable, "
            f"or an Orbax checkpoint directory; got the path {directory!r}, which is not a directory"
        )
    if not os.path.exists(os.path.join(directory, "_METADATA")):
        raise CheckpointError(f"no checkpoint at {directory!r}: no _METADATA file (not an Orbax PyTree checkpoint)")

    info = _metadata_flags(directory)
    return CheckpointTree(
        directory,
        _opened_entries(directory, info),
        info.get("use_ocdbt", True),
        info.get("use_zarr3", False),
        _disk_bytes(directory),
    )


def spec(directory: str, name: str, use_ocdbt: bool, use_zarr3: bool) -> dict:
    """The tensorstore spec of one array as Orbax stores it (zarr or zarr3; in OCDBT or one directory each)."""
    if use_ocdbt:
        kvstore = {"driver": "ocdbt", "base": f"file://{directory}", "path": name}
    else:
        kvstore = {"driver": "file", "path": f"{directory}/{name}"}
    return {"driver": "zarr3" if use_zarr3 else "zarr", "kvstore": kvstore, "open": True}


def _opened_entries(directory: str, info: dict) -> list[CheckpointEntry]:
    """Shape, dtype and stored chunk of every array from its zarr metadata (no data read); an array
    whose metadata cannot be read (data files missing or corrupt: OCDBT keeps both together) is an
    unreadable entry. Orbax's own reader was not used here: on a damaged OCDBT database it leaves
    asyncio errors on stderr after returning."""
    import tensorstore as ts

    shardings = _shardings(directory)
    key_impls = _key_impls(directory)
    futures = [
        (
            path,
            name,
            ts.open(
                spec(directory, name, info.get("use_ocdbt", True), info.get("use_zarr3", False)),
                read=True,
            ),
        )
        for path, name in info["paths"]
    ]
    entries = []
    for path, name, future in futures:
        try:
            arr = future.result()
            dtype = arr.dtype.numpy_dtype
            # None for a 0-d array (an RNG count): one chunk. An opened array's read chunk has every
            # dimension (tensorstore's stub allows None, for a layout still unconstrained).
            stored = cast("tuple[int, ...] | None", arr.chunk_layout.read_chunk.shape)
            chunk = tuple(int(c) for c in stored) if stored is not None else tuple(int(d) for d in arr.shape)
            entries.append(
                CheckpointEntry(
                    path,
                    name,
                    tuple(int(d) for d in arr.shape),
                    str(np.dtype(dtype)),
                    shardings.get(name),
                    chunk_shape=chunk,
                    key_impl=key_impls.get(name),
                )
            )
        except Exception as e:  # noqa: BLE001 - boundary: a damaged array is its row's status
            _log.info("nnx_lab: opening %s in %s failed", name, directory, exc_info=True)
            entries.append(
                CheckpointEntry(
                    path,
                    name,
                    None,
                    None,
                    None,
                    f"missing or corrupt data: {type(e).__name__}: {first_line(str(e), 200)}",
                )
            )
    return entries


def _key_impls(directory: str) -> dict[str, str]:
    """Orbax's ``array_metadatas/process_*`` files: array name -> its PRNG key impl, for the arrays
    saved from key arrays (stored as their uint32 key data, restored as keys)."""
    import glob
    import json

    out: dict[str, str] = {}
    for name in glob.glob(os.path.join(directory, "array_metadatas", "process_*")):
        try:
            with open(name) as f:
                items = json.load(f).get("array_metadatas") or ()
        except (OSError, ValueError, AttributeError):
            continue
        for item in items if isinstance(items, list) else ():
            meta = item.get("array_metadata") if isinstance(item, dict) else None
            if not isinstance(meta, dict):
                continue
            ext = meta.get("ext_metadata")
            impl = ext.get("random_key_impl") if isinstance(ext, dict) else None
            param = meta.get("param_name")
            if isinstance(impl, str) and isinstance(param, str):
                out[param] = impl
    return out


def _shardings(directory: str) -> dict[str, str]:
    """Orbax's ``_sharding`` file: array name -> how it was placed when saved (one device: left out)."""
    import base64
    import json

    try:
        with open(os.path.join(directory, "_sharding")) as f:
            raw = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    for key, value in raw.items() if isinstance(raw, dict) else ():
        try:
            name = base64.b64decode(key).decode()
            desc = json.loads(value)
        except (ValueError, TypeError):
            continue
        if isinstance(desc, dict) and desc.get("sharding_type") != "SingleDeviceSharding":
            out[name] = first_line(json.dumps(desc, sort_keys=True), 200)
    return out


def _metadata_flags(directory: str) -> dict:
    """``_METADATA``'s flags and each array's keys with Orbax's name for it (the keys joined by dots);
    a :class:`CheckpointError` where it holds no tree (Orbax's own reader refuses it too)."""
    import json

    try:
        with open(os.path.join(directory, "_METADATA")) as f:
            data = json.load(f)
        out: dict = {k: bool(data[k]) for k in ("use_ocdbt", "use_zarr3") if k in data}
        paths = []
        for item in data["tree_metadata"].values():
            keys = tuple(k.get("key") for k in item.get("key_metadata", ()))
            path = keys[:-1] if len(keys) > 1 and keys[-1] == "value" else keys
            paths.append(
                (
                    tuple(int(k) if isinstance(k, str) and k.isdigit() else k for k in path),
                    ".".join(str(k) for k in keys),
                )
            )
        out["paths"] = paths
        return out
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        _log.info("nnx_lab: _METADATA of %s unreadable", directory, exc_info=True)
        raise CheckpointError(
            f"cannot read the checkpoint's metadata at {directory!r}: {type(e).__name__}: {first_line(str(e), 200)}"
        ) from None
