"""What differs between the flax versions nnx_lab runs on: Colab's flax 0.11.2 up to the newest.

Everything version-dependent lives here, so the rest of the code calls one function instead of
testing for attributes. A feature whose flax API is missing answers with :class:`NeedsNewerFlax`,
one line naming the feature, the installed and the needed flax, and the upgrade line for this
runtime's backend (nothing is ever upgraded for the user: on Colab that restarts the runtime).

>>> needed("nnx.capture")
'0.12.6'
>>> version_tuple("0.12.4.dev1+g0ab") >= version_tuple("0.12.4")
True
>>> upgrade_line("gpu")
'pip install -U "jax[cuda12]" flax'
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any, Iterator, Protocol

import flax
import jax
from flax import nnx


class Device(Protocol):
    """A jax device, as nnx_lab reads it (jax's stubs leave ``jax.Device`` unresolved)."""

    @property
    def platform(self) -> str: ...

    @property
    def id(self) -> int: ...

    @property
    def device_kind(self) -> str: ...

    @property
    def client(self) -> object: ...

    def memory_stats(self) -> dict[str, int] | None: ...


FLAX_VERSION: str = flax.__version__

#: flax API -> the first flax release that has it (from flax's git tags).
_NEEDS = {
    "nnx.view": "0.12.4",  # nnx.view / nnx.view_info / Module.set_view (flax commit 4f5a64c)
    "nnx.view_info": "0.12.4",
    "nnx.capture": "0.12.6",  # nnx.capture and Module.__captures__ (flax commit 0e92624)
    "nnx.List": "0.12.0",  # nnx.List / nnx.Dict containers
}
#: set_view arguments flax's Module.train() / eval() set (False for train, True for eval).
MODE_ARGS = ("deterministic", "use_running_average")

_UPGRADE = {
    "gpu": 'pip install -U "jax[cuda12]" flax',
    "tpu": 'pip install -U "jax[tpu]" flax',
    "cpu": "pip install -U flax",
}


def version_tuple(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: ``"0.12.4rc1"`` -> ``(0, 12, 4)``."""
    return tuple(int(n) for n in re.findall(r"\d+", version.split("+")[0].split("rc")[0].split(".dev")[0])[:3])


def needed(feature: str) -> str:
    """The first flax release with ``feature`` (a key of the table above)."""
    return _NEEDS[feature]


def has(feature: str) -> bool:
    """Whether the installed flax has ``feature``."""
    return version_tuple(FLAX_VERSION) >= version_tuple(_NEEDS[feature])


def missing(feature: str) -> str | None:
    """Why ``feature`` is unavailable (needed and installed flax), or None when the installed flax has it."""
    if has(feature):
        return None
    return f"needs flax>={_NEEDS[feature]} ({feature}); installed flax {FLAX_VERSION}"


def upgrade_line(backend: str | None = None) -> str:
    """The pip line that upgrades flax without moving jax off this runtime's accelerator."""
    if backend is None:
        backend = jax.default_backend()
    return _UPGRADE.get(backend, _UPGRADE["cpu"])


class NeedsNewerFlax(RuntimeError):
    """A feature the installed flax lacks; IPython shows it as its one line, without a traceback."""

    def __init__(self, what: str, feature: str, backend: str | None = None):
        self.feature, self.needed = feature, _NEEDS[feature]
        super().__init__(
            f"{what} needs flax>={self.needed} ({feature}); installed flax {FLAX_VERSION}. "
            f"Upgrade with: {upgrade_line(backend)} (then restart the runtime)"
        )

    def _render_traceback_(self) -> list[str]:  # IPython's hook for exceptions that print themselves
        return [f"{type(self).__name__}: {self}"]


def require(feature: str, what: str | None = None) -> None:
    """Raise :class:`NeedsNewerFlax` unless the installed flax has ``feature``."""
    if not has(feature):
        raise NeedsNewerFlax(what or feature, feature)


def get_value(variable: nnx.Variable) -> Any:
    """A Variable's value (``get_value()`` from flax 0.12.1; ``.value`` before)."""
    if not _HAS_GET_VALUE:
        return variable.value
    raw = getattr(variable, "get_raw_value", None)
    if raw is not None:
        value = raw()
        # What get_value() returns for a plain array with no get hook (its "copy" is the same
        # object), without its pytree map: a walk reads thousands of these.
        if isinstance(value, jax.Array) and "on_get_value" not in variable.get_metadata():
            return value
    return variable.get_value()


def variable_type(variable: nnx.Variable) -> type:
    """The type a Variable was declared with: ``nnx.Param`` for a hijax Param too (flax >= 0.12's
    ``nnx.var_defaults(hijax=True)`` makes every Variable a ``HijaxVariable`` holding its type)."""
    t = type(variable)
    return variable.var_type if t is HIJAX_VARIABLE else t


def set_value(variable: nnx.Variable, value: Any) -> None:
    """Set a Variable's value (``set_value()`` from flax 0.12.1; ``.value =`` before)."""
    if _HAS_GET_VALUE:
        variable.set_value(value)
    else:
        variable.value = value


def iter_modules(module: Any) -> Iterator[tuple[tuple, Any]]:
    """``(path, module)`` for ``module`` and every submodule (a function from flax 0.12.1)."""
    return nnx.iter_modules(module) if _HAS_ITER_MODULES else module.iter_modules()


def spec_text(spec: Any) -> str:
    """A PartitionSpec as newer jax prints it, ``P('data', None)`` (jax 0.7 says ``PartitionSpec(...)``)."""
    text = str(spec)
    return "P" + text[len("PartitionSpec") :] if text.startswith("PartitionSpec(") else text


class _Annotated:
    """What ``nnx.spmd.get_var_pspec`` reads of a Variable: its metadata (and no shape)."""

    def __init__(self, metadata: dict):
        self._metadata = metadata

    def get_metadata(self) -> dict:
        return self._metadata


#: Where a Variable's metadata holds its logical sharding annotation: flax 0.12 ``out_sharding``, 0.11 ``sharding_names``.
SHARDING_KEYS = ("out_sharding", "sharding_names", "sharding")


def partition_spec_of(metadata: dict, names: tuple) -> jax.sharding.PartitionSpec:
    """The PartitionSpec flax derives from the sharding annotation ``names`` of a Variable with
    ``metadata`` (logical axis rules in effect and the Variable's own ``sharding_rules`` applied)."""
    from flax.nnx import spmd

    meta = dict(metadata)
    meta["out_sharding"] = meta["sharding_names"] = names
    return spmd.get_var_pspec(_Annotated(meta))  # pyright: ignore[reportArgumentType, reportReturnType] - a stand-in: flax reads only get_metadata(); names given, a spec (never None)


def iter_graph(node: Any) -> Iterator[tuple[tuple, Any]]:
    """``nnx.iter_graph``, each Variable once, at its first path.

    Newer flax visits a Variable reachable by two paths (tied weights) once; flax 0.11 at both.
    """
    seen: set[int] = set()
    for path, value in nnx.iter_graph(node):
        if isinstance(value, nnx.Variable):
            if id(value) in seen:
                continue
            seen.add(id(value))
        yield path, value


def tolinen_module(obj: Any) -> Any:
    """For an ``nnx.bridge.ToLinen`` (NNX inside Linen), the wrapped NNX module built abstractly
    (``nnx.eval_shape``: shapes only, nothing allocated); None for anything else."""
    from flax.nnx.bridge import ToLinen

    if not isinstance(obj, ToLinen):
        return None

    def build() -> Any:
        kwargs = dict(obj.kwargs or {})
        if not getattr(obj, "skip_rng", False):
            kwargs.setdefault("rngs", nnx.Rngs(0))
        return obj.nnx_class(*obj.args, **kwargs)

    return nnx.eval_shape(build)


def set_view(module: Any) -> Any:
    """The function whose signature lists ``module``'s train/eval and view options, or None.

    From flax 0.12.4 that is the class's ``set_view``. Before, ``Module.train()`` / ``eval()`` set
    the attributes in :data:`MODE_ARGS` wherever a module has them, so a stand-in with exactly
    those arguments describes the module the same way.
    """
    if has("nnx.view"):
        return getattr(type(module), "set_view", None)
    present = tuple(name for name in MODE_ARGS if hasattr(module, name))
    return _mode_stand_in(present) if present else None


@functools.cache
def _mode_stand_in(names: tuple[str, ...]) -> Any:
    def set_view(self, **kwargs):  # only its signature is read
        raise NotImplementedError

    import inspect

    params = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation="bool | None") for n in names
    ]
    set_view.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params]
    )
    set_view.__doc__ = "Set by model.train() (False) and model.eval() (True)."
    return set_view


class MimebundleDisplay:
    """Mix into a widget class (before ``AnyWidget``) so every ipywidgets displays its mimebundle.

    ipywidgets 7 (Colab) displays a widget with ``Widget._ipython_display_``, which sends only the
    widget view: the widget's ``text/html`` fallback, what a saved notebook shows where widget state
    is not saved (VS Code, GitHub, nbviewer), would be lost. IPython skips a non-callable
    ``_ipython_display_`` and asks ``_repr_mimebundle_``, as it does on ipywidgets 8.
    """

    _ipython_display_ = None


_HAS_GET_VALUE = hasattr(nnx.Variable, "get_value")
#: flax's hijax Variable class (flax >= 0.12), or None: not a pytree node, so jax sees it as a leaf.
HIJAX_VARIABLE: type | None = getattr(nnx.variablelib, "HijaxVariable", None)
_HAS_ITER_MODULES = hasattr(nnx, "iter_modules")


def outside_context_mesh() -> Any:
    """A context in which jax sees no context mesh on this thread, for nnx_lab's own launches.

    A notebook that ran ``jax.set_mesh(mesh)`` (flax's miniGPT example does) makes every
    ``jax.jit`` call on this thread check its arguments against that mesh: a statistics kernel
    over one shard, or over a scalar on one device, is refused ("Received incompatible devices
    for jitted computation ... jit's context mesh with device ids [0, 1]"). Our reductions read
    the arrays where they are, so they run outside it; the user's mesh is back on exit. Inside a
    trace (where ``set_mesh`` is refused): nothing changes.
    """
    if not _has_context_mesh():
        return contextlib.nullcontext()
    try:
        return jax.set_mesh(None)  # jax >= 0.8: None is no mesh
    except ValueError:
        pass
    try:
        import numpy as np

        return jax.set_mesh(jax.sharding.Mesh(np.empty((), dtype=object), ()))  # jax 0.7: the empty mesh
    except ValueError:  # inside a trace: jax refuses set_mesh there; the call is the user's own then
        return contextlib.nullcontext()


def auto_axes(x: Any) -> Any:
    """``x`` typed on Auto mesh axes: the same buffers (no copy), for nnx_lab's own programs.

    On a mesh with Explicit axes (``jax.make_mesh`` in flax's ViT example), an array's sharding is
    part of its type inside ``jax.jit``, and a reshape of a sharded dimension is refused
    ("ShardingTypeError: This reshape is not supported"). Our reductions leave the partitioning to
    XLA, as on an Auto mesh; anything not a jax.Array on such a mesh comes back unchanged.
    """
    axis_type = jax.sharding.AxisType
    sharding = getattr(x, "sharding", None)
    if not isinstance(x, jax.Array) or not isinstance(sharding, jax.sharding.NamedSharding):
        return x
    mesh = sharding.mesh
    if not isinstance(mesh, jax.sharding.Mesh) or all(t != axis_type.Explicit for t in mesh.axis_types or ()):
        return x
    auto = jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=(axis_type.Auto,) * len(mesh.axis_names))
    return jax.device_put(x, jax.sharding.NamedSharding(auto, sharding.spec, memory_kind=sharding.memory_kind))


def _has_context_mesh() -> bool:
    """Whether a concrete mesh is set on this thread (``jax.set_mesh``, ``jax.sharding.use_mesh``)."""
    getter = getattr(jax.sharding, "get_mesh", None)
    if getter is None:
        return True  # cannot tell: clearing an empty context is harmless
    try:
        return not getter().empty
    except Exception:  # noqa: BLE001 - a jax whose get_mesh differs: clear it anyway (harmless when empty)
        return True
