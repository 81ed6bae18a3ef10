"""The statistics kernels' compiled executables, kept on disk between sessions.

A first snapshot in a fresh kernel compiles one executable per distinct (kernel, shape, dtype)
it meets: about 0.1-0.4 s each on a CPU, most of what a first look at a small model costs. The
executables are the same every session (same kernels, same jax, same device), so each one compiled
is written to a small cache on disk and a later session loads it instead (about 10 ms). The same
for the kernels mapped over a stacked Variable's layer axis (``_layers.layered``: named by their
kernel and axis) and the update ratio's program (``_updates``).

Kept in ``$NNX_LAB_CACHE_DIR`` (default ``$XDG_CACHE_HOME/nnx_lab/kernels``, else
``~/.cache/nnx_lab/kernels``); ``NNX_LAB_CACHE_DIR=off`` turns it off. Only our own kernels
go there (jax's persistent compilation cache is global: switching it on would change where the
user's own programs are compiled and kept). Entries are keyed by everything an executable depends
on: the kernel's source, jax and jaxlib versions, the device, ``XLA_FLAGS``, x64, shape and dtype.
Only single-device arrays in a single-process run are cached; at most :data:`MAX_FILES` files are
kept (the oldest go first). A file that cannot be read or loaded is removed and compiled afresh.

A viewer's program for a model structure (:mod:`._programs`: several seconds to compile at 10,000
Variables) is kept the same way (:func:`compile_program`), keyed by its lowered module's text: the
same model in a later session starts with its program instead of compiling it again.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import threading
from pathlib import Path
from typing import Any

import jax

from ._kernels import compile_lowered, kernel_options, kernels_file

#: Cached executables kept on disk at most (each is about 50 KB).
MAX_FILES = 512

_loaded: dict = {}  # spec -> executable, this process
_lock = threading.Lock()
_source_hash: str | None = None


def cache_dir() -> Path | None:
    """Where the executables are kept, or None when the cache is off."""
    configured = os.environ.get("NNX_LAB_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "0", "off", "false", "none"):
            return None
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nnx_lab" / "kernels"


def loaded_executable(spec: Any) -> Any | None:
    """The executable this process holds for ``spec`` (see ``_stats._spec``), if any."""
    return _loaded.get(spec)


def executables_count() -> int:
    """Executables this process compiled or loaded through the cache."""
    return len(_loaded)


def prepare_executable(kernel: Any, kernel_id: int, x: Any, spec: Any) -> bool:
    """Make the executable of ``kernel`` for ``x``'s spec: loaded from disk when kept there, else
    compiled and written. False when the cache does not apply (off, sharded, several processes) or
    fails: the caller's ``kernel(x)`` then compiles through jax.jit as usual."""
    if spec is None or spec in _loaded:
        return spec is not None
    where = cache_dir()
    if where is None or jax.process_count() > 1 or not isinstance(x, jax.Array):
        return False
    if not isinstance(x.sharding, jax.sharding.SingleDeviceSharding):
        return False
    try:
        from jax.experimental import serialize_executable
    except ImportError:
        return False
    path = where / f"{_key(kernel_id, x)}.bin"
    executable = _read(path, serialize_executable)
    if executable is None:
        try:
            executable = compile_lowered(kernel.lower(x), kernel_options(x))
        except Exception:  # noqa: BLE001 - the caller's kernel(x) reports the failure
            return False
        _write(path, executable, serialize_executable)
    with _lock:
        _loaded[spec] = executable
    return True


def compile_program(lowered: Any, options: tuple[dict, ...], specs: Any) -> Any:
    """``lowered`` compiled with the first set of ``options`` the backend accepts: loaded from the
    disk cache when kept there, else compiled (and kept when its inputs ``specs``, arrays or
    ``ShapeDtypeStruct``s, all live on one and the same device, in one process)."""
    sharding = getattr(specs[0], "sharding", None) if specs else None
    single = isinstance(sharding, jax.sharding.SingleDeviceSharding) and all(
        getattr(s, "sharding", None) == sharding for s in specs)
    where = cache_dir() if single and jax.process_count() == 1 else None
    serialize_executable = None
    if where is not None:
        try:
            from jax.experimental import serialize_executable
        except ImportError:
            where = None
    if where is None:
        return compile_lowered(lowered, options)
    device = next(iter(sharding.device_set))
    parts = (lowered.as_text(), repr(options), jax.__version__, getattr(jax.lib, "__version__", ""),
             device.platform, device.device_kind, getattr(device.client, "platform_version", ""),
             os.environ.get("XLA_FLAGS", ""), bool(jax.config.jax_enable_x64))
    path = where / f"program-{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}.bin"
    executable = _read(path, serialize_executable)
    if executable is None:
        executable = compile_lowered(lowered, options)
        _write(path, executable, serialize_executable)
    return executable


def _key(kernel_id: int, x: Any) -> str:
    global _source_hash
    if _source_hash is None:
        with open(kernels_file(), "rb") as f:
            _source_hash = hashlib.sha256(f.read()).hexdigest()
    device = next(iter(x.sharding.device_set))
    parts = (_source_hash, kernel_id, jax.__version__, getattr(jax.lib, "__version__", ""),
             device.platform, device.device_kind, getattr(device.client, "platform_version", ""),
             os.environ.get("XLA_FLAGS", ""), bool(jax.config.jax_enable_x64), tuple(x.shape), str(x.dtype),
             getattr(x, "weak_type", False), repr(kernel_options(x)))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def _read(path: Path, serialize_executable: Any) -> Any | None:
    try:
        with open(path, "rb") as f:
            blob, in_tree, out_tree = pickle.load(f)
        executable = serialize_executable.deserialize_and_load(blob, in_tree, out_tree)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - truncated, from another version, not loadable: compiled afresh
        try:
            path.unlink()
        except OSError:
            pass
        return None
    try:
        os.utime(path)  # recently used: kept when the oldest are removed
    except OSError:
        pass
    return executable


def _write(path: Path, executable: Any, serialize_executable: Any) -> None:
    try:
        payload = pickle.dumps(serialize_executable.serialize(executable))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)  # whole or not at all, even with two kernels writing at once
        files = sorted(path.parent.glob("*.bin"), key=lambda p: p.stat().st_mtime)
        for old in files[:max(0, len(files) - MAX_FILES)]:
            old.unlink()
    except Exception:  # noqa: BLE001 - a read-only or full disk: the executable is still used in memory
        pass
