"""Jitted one-pass reductions that run at memory speed on XLA:CPU as well (compare, checkpoint stats).

Why: since jax 0.8 XLA:CPU's fusion emitters emit a float reduction whose producer is not a plain
``sum`` (a variadic reduce, a sum of an elementwise expression, any integer count) as one scalar
loop per output element: float addition may not be reassociated, so LLVM cannot vectorize it. The
compare program ran at 0.13 of the bandwidth floor on jax 0.10 (0.9 on jax 0.7, whose emitter
vectorized reductions itself). Compiling with reassociation allowed (``xla_cpu_enable_fast_math``,
NaN, Inf, division and functions still honoured) lets the loop vectorize: the same program reaches
the floor. What it changes: sums are added in another order (float32 rounding, about 1e-6 relative
on these run lengths), and a ``max`` may skip a NaN (callers take NaN from a sum instead: see
``compare._values.Partials``). Other backends compile as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .compat import auto_axes, outside_context_mesh

__all__ = ["CPU_OPTIONS", "ReductionJit", "run_width"]

#: XLA debug options of the CPU programs (per compile: nothing global changes).
CPU_OPTIONS = {
    "xla_cpu_enable_fast_math": True,
    "xla_cpu_fast_math_honor_nans": True,
    "xla_cpu_fast_math_honor_infs": True,
    "xla_cpu_fast_math_honor_division": True,
    "xla_cpu_fast_math_honor_functions": True,
    "xla_cpu_enable_fast_min_max": False,
    "xla_llvm_disable_expensive_passes": True,  # reductions gain nothing from them; compiles take 30% less
}


class ReductionJit:
    """``fun`` jitted twice, lazily: with :data:`CPU_OPTIONS` for the CPU backend, plainly for others.

    ``call(platform, *args)`` picks by the platform of the devices the arguments live on."""

    def __init__(self, fun: Callable, **jit_kwargs: Any):
        self._fun, self._kwargs, self._jits = fun, jit_kwargs, {}  # CPU or not -> jitted

    def __call__(self, platform: str, *args: Any) -> Any:
        import jax

        cpu = platform == "cpu"
        fn = self._jits.get(cpu)
        if fn is None:
            options: dict[str, Any] = {"compiler_options": dict(CPU_OPTIONS)} if cpu else {}
            fn = self._jits[cpu] = jax.jit(self._fun, **self._kwargs, **options)
        args = jax.tree.map(auto_axes, args)  # an Explicit mesh's types would refuse our reshapes
        with outside_context_mesh():  # the user's jax.set_mesh would refuse arrays on other devices
            return fn(*args)

    def _cache_size(self) -> int:
        """Programs compiled so far, both variants (as ``jax.jit``'s own ``_cache_size``)."""
        return sum(fn._cache_size() for fn in self._jits.values())


def run_width(m: int) -> int:
    """The run of elements each one-pass partial covers: a divisor of ``m`` (sequential float32 sums
    over at most 4096 elements stay within about 1e-4 relative; the partials are summed pairwise)."""
    for w in (4096, 2048, 1024, 512, 256, 128, 64):
        if m % w == 0 and m > w:
            return w
    return max(m, 1)
