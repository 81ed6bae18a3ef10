"""The statistics kernels' compiled executables, kept on disk between sessions.

A first snapshot in a fresh kernel compiles one executable per distinct (kernel, shape, dtype)
it meets: about 0.1-0.4 s each on a CPU, most of what a first look at a small model costs. The
executables are the same every session (same kernels, same jax, same device), so each one compiled
is written to a small cache on disk and a later session loads it instead (about 10 ms). The same
for the kernels mapped over a stacked Variable's layer axis (``_layers.layered``: named by their
kernel and axis) and the update ratio's program (``_updates``).

Where it is kept and what protects it: docs/guide/cache.md and :mod:`._cache_store`; why it is
not jax's persistent compilation cache: docs/ARCHITECTURE.md. Entries are keyed by everything an
executable depends on (:func:`_key`, :func:`_environment`); a viewer's program (:mod:`._programs`)
is kept the same way (:func:`compile_program`), keyed by its lowered module's text. An entry holds
jax's serialized executable, never a pickle of ours: its input and output trees are rebuilt from
the call. Any failure of the cache is logged at debug level and the executable compiled as without it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import jax

from ..compat import outside_context_mesh
from ..fallbacks import slower
from ..memo import Memo
from ._cache_store import VERSION, open_store
from ._compiling import compile_lowered, kernel_options
from ._kernels import KERNELS, grouped, kernels_file, result_count

if TYPE_CHECKING:
    from types import ModuleType

    from ._cache_store import Store
    from ._types import Device, Kernel, Spec, Value

    # (what loaded_executable, grouped_executable and compile_program give: jax's compiled executable)
    Executable = jax.stages.Compiled
    KernelId = int | tuple[str, int, int]  # a kernel's place in KERNELS, or ("vmap"/"grouped", place, axis/k)

logger = logging.getLogger("nnx_lab")

# spec -> executable, this process; a long session's least recently used leave (jax.jit then
# compiles them again on their next use)
_loaded: Memo[Spec, Executable] = Memo(4096)
# (kernel, k, spec) -> a grouped executable (:mod:`._grouped`)
_grouped: Memo[tuple[int, int, tuple[int, ...], str, jax.sharding.Sharding, bool], Executable] = Memo(256)
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


def loaded_executable(spec: Spec) -> Executable | None:
    """The executable this process holds for ``spec`` (see ``_stats._spec``), if any."""
    return _loaded.get(spec)


def executables_count() -> int:
    """Executables this process compiled or loaded through the cache."""
    return len(_loaded)


def prepare_executable(kernel: Kernel, kernel_id: KernelId, x: Value, spec: Spec | None) -> bool:
    """Make the executable of ``kernel`` for ``x``'s spec: loaded from disk when kept there, else
    compiled and written. False when the cache does not apply (off, refused, sharded, several
    processes) or fails: the caller's ``kernel(x)`` then compiles through jax.jit as usual."""
    if spec is None or spec in _loaded:
        return spec is not None
    if jax.process_count() > 1 or not isinstance(x, jax.Array):
        return False
    if not isinstance(x.sharding, jax.sharding.SingleDeviceSharding):
        return False
    opened = _open()
    if opened is None:
        return False
    store, serializer = opened
    try:
        name = f"kernel-{_key(kernel_id, x)}.xla"
        base = kernel_id if isinstance(kernel_id, int) else kernel_id[1]  # ("vmap", kernel, axis): same results
        # The trees jax would give: one array in; the kernel's results out (a layer axis adds a dimension, not a leaf).
        trees = (
            jax.tree_util.tree_structure(((x,), {})),
            jax.tree_util.tree_structure((0,) * result_count(KERNELS[base])),
        )
    except Exception:  # noqa: BLE001 - boundary of the optional cache: an unknown kernel id, not kept on disk
        logger.debug("nnx_lab cache: no entry for kernel %r", kernel_id, exc_info=True)
        return False
    executable = _load(store, name, trees, serializer, next(iter(x.sharding.device_set)))
    if executable is None:
        try:
            executable = compile_lowered(kernel.lower(x), kernel_options(x))
        except Exception as e:  # noqa: BLE001 - boundary of the optional cache: the caller's kernel(x) reports it
            slower("kernel %r not compiled for the disk cache: compiled anew in each session", kernel_id, error=e)
            return False
        _save(store, name, executable, trees, serializer)
    _loaded[spec] = executable
    return True


def grouped_executable(
    kernel: Kernel, x: jax.Array | jax.ShapeDtypeStruct, k: int, *, compile: bool
) -> Executable | None:
    """The executable of ``grouped(kernel, k)`` (:mod:`._grouped`: ``kernel`` mapped over ``k``
    arrays of ``x``'s spec, one launch) for a single-device ``x`` (an array or a
    ``ShapeDtypeStruct``): this process's, else loaded from the disk cache (authenticated as every
    entry), else with ``compile`` compiled with ``kernel``'s own options and kept there. None when
    the cache is off or refused, or it is not there and not to be compiled."""
    if jax.process_count() > 1 or kernel not in KERNELS:
        return None
    sharding = getattr(x, "sharding", None)
    if not isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return None
    memo_key = (KERNELS.index(kernel), k, x.shape, str(x.dtype), sharding, getattr(x, "weak_type", False))
    executable = _grouped.get(memo_key)
    if executable is not None:
        return executable
    opened = _open()
    if opened is None:
        return None
    store, serializer = opened
    kernel_id = KERNELS.index(kernel)
    name = f"kernel-{_key(('grouped', kernel_id, k), x)}.xla"
    # The trees jax would give: k arrays in; the kernel's results out (each with k rows).
    trees = (
        jax.tree_util.tree_structure(((0,) * k, {})),
        jax.tree_util.tree_structure((0,) * result_count(kernel)),
    )
    device = next(iter(sharding.device_set))
    executable = _load(store, name, trees, serializer, device)
    if executable is None:
        if not compile:
            return None
        spec = jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding, weak_type=getattr(x, "weak_type", False))
        with outside_context_mesh():
            lowered = grouped(kernel, k).lower(*[spec] * k)
        executable = compile_lowered(lowered, kernel_options(spec))  # its error is the caller's to report
        _save(store, name, executable, trees, serializer)
    _grouped[memo_key] = executable
    return executable


def grouped_count() -> int:
    """Grouped executables this process compiled or loaded (part of ``kernel_cache_size``)."""
    return len(_grouped)


def compile_program(
    lowered: jax.stages.Lowered, options: tuple[dict, ...], specs: Sequence[jax.Array | jax.ShapeDtypeStruct]
) -> Executable:
    """``lowered`` compiled with the first set of ``options`` the backend accepts: loaded from the
    disk cache when kept there, else compiled (and kept when its inputs ``specs``, arrays or
    ``ShapeDtypeStruct``s, all live on one and the same device, in one process)."""
    sharding = getattr(specs[0], "sharding", None) if specs else None
    if not isinstance(sharding, jax.sharding.SingleDeviceSharding) or jax.process_count() > 1:
        return compile_lowered(lowered, options)
    single = all(getattr(s, "sharding", None) == sharding for s in specs)
    opened = _open() if single else None
    if opened is None:
        return compile_lowered(lowered, options)
    store, serializer = opened
    try:
        trees = (lowered.in_tree, lowered.out_tree)  # the call's own: never read from the file
        device = next(iter(sharding.device_set))
        parts = (
            lowered.as_text(),
            repr(options),
            repr(trees),
            *_environment(device),
            VERSION,
        )
        name = f"program-{hashlib.sha256(repr(parts).encode()).hexdigest()[:32]}.xla"
    except Exception:  # noqa: BLE001 - boundary of the optional cache: compiled as without it
        logger.debug("nnx_lab cache: no entry for a program", exc_info=True)
        return compile_lowered(lowered, options)
    executable = _load(store, name, trees, serializer, device)
    if executable is None:
        executable = compile_lowered(lowered, options)  # its error is the caller's to report
        _save(store, name, executable, trees, serializer)
    return executable


def _open() -> tuple[Store, ModuleType] | None:
    """(the checked store, jax's serializer), or None: the cache is off, refused or unavailable."""
    where = cache_dir()
    if where is None:
        return None
    from jax.experimental import serialize_executable

    try:
        store = open_store(where)
    except Exception:  # noqa: BLE001 - a cache that fails is no cache, never a failed snapshot
        logger.debug("nnx_lab cache: %s could not be opened", where, exc_info=True)
        return None
    return None if store is None else (store, serialize_executable)


def _environment(device: Device) -> tuple:
    """What every executable also depends on, beside its own program: jax and jaxlib, the device,
    the host CPU's instruction-set features (XLA:CPU compiles for the CPU it runs on: a home
    directory shared by machines of different CPUs must not hand one's code to another),
    ``XLA_FLAGS`` and x64 (part of each entry's key, in this order)."""
    return (
        jax.__version__,
        getattr(jax.lib, "__version__", ""),
        device.platform,
        device.device_kind,
        device.id,
        getattr(device.client, "platform_version", ""),
        cpu_features() if device.platform == "cpu" else "",
        os.environ.get("XLA_FLAGS", ""),
        bool(jax.config.jax_enable_x64),  # pyright: ignore[reportAttributeAccessIssue] - jax's Config sets its flags as attributes at run time
    )


@functools.lru_cache(maxsize=1)
def cpu_features() -> str:
    """This host's CPU: its model and instruction-set feature flags as the OS lists them (Linux's
    ``/proc/cpuinfo``), else what ``platform`` says of the machine and processor."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n\n", 1)[0].splitlines()  # the first processor's block
        wanted = ("vendor_id", "model name", "flags", "Features", "CPU implementer", "CPU part")
        found = [line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].strip() in wanted]
        if found:
            return hashlib.sha256(repr(found).encode()).hexdigest()[:16]
    except OSError:  # not Linux: the coarser description below
        pass
    return f"{platform.machine()} {platform.processor()}"


def _key(kernel_id: KernelId, x: jax.Array | jax.ShapeDtypeStruct) -> str:
    global _source_hash
    if _source_hash is None:
        with open(kernels_file(), "rb") as f:
            _source_hash = hashlib.sha256(f.read()).hexdigest()
    device = next(iter(x.sharding.device_set))
    parts = (
        _source_hash,
        kernel_id,
        *_environment(device),
        tuple(x.shape),
        str(x.dtype),
        getattr(x, "weak_type", False),
        repr(kernel_options(x)),
        VERSION,
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def _load(store: Store, name: str, trees: tuple, serializer: ModuleType, device: Device) -> Executable | None:
    """Entry ``name`` loaded with the call's ``trees`` onto ``device`` once it authenticates, else None."""
    try:
        payload = store.read(name)
        if payload is None:
            return None
        # Onto its one device: by default jax loads it for every device of the client, and on a host
        # of several devices (jax 0.7.2) running it then aborts the process ("device and buffer counts
        # mismatch: 8 vs. 1").
        return serializer.deserialize_and_load(payload, *trees, execution_devices=[device])
    except Exception:  # noqa: BLE001 - another jaxlib, another device: compiled afresh and replaced
        logger.debug("nnx_lab cache: %s could not be loaded", store.root / name, exc_info=True)
        return None


def _save(store: Store, name: str, executable: Executable, trees: tuple, serializer: ModuleType) -> None:
    """Keep ``executable`` as entry ``name``: only its serialized bytes, its trees being the call's."""
    try:
        payload, in_tree, out_tree = serializer.serialize(executable)
        if (in_tree, out_tree) != trees:  # it would load with other trees: not kept (said, for whoever edits a kernel)
            logger.debug(
                "nnx_lab cache: %s not kept: its trees %s, %s differ from the rebuilt %s, %s",
                name,
                in_tree,
                out_tree,
                *trees,
            )
            return
        store.write(name, payload)
    except Exception:  # noqa: BLE001 - a read-only or full disk: the executable is still used in memory
        logger.debug("nnx_lab cache: %s not kept", store.root / name, exc_info=True)
