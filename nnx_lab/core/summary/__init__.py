"""``nnx_lab.summary(model, *args)``: what each module of a model takes, gives and costs, from one trace.

The call is traced once (``jax.jit(...).trace``) on a marked copy of the model's graph
(:mod:`._trace`): every module call runs in its own named scope, so every equation of the one
program names the innermost module call that emitted it. Each equation is costed as XLA's cost
analysis costs it (:mod:`._costs`), and the costs are added up per call. Nothing is compiled per
module. The whole program is compiled once, only for XLA's memory analysis, and only when the peak
memory is first asked for (``Summary.memory``; the widget compiles on a background thread and shows the
line when it is done; ``memory=False`` skips it).
The model is never changed, and an abstract model (``nnx.eval_shape``) with ``jax.ShapeDtypeStruct``
inputs is summarised without allocating anything.
"""

from ._build import summary
from ._data import DISPLAY_HOOKS, MARIMO_HOOKS, RNG_MARK, Summary, SummaryError, SummaryRow, rng_flops_text
from ._formats import bytes_text, count_text, params_text

__all__ = [
    "DISPLAY_HOOKS",
    "MARIMO_HOOKS",
    "RNG_MARK",
    "Summary",
    "SummaryError",
    "SummaryRow",
    "bytes_text",
    "count_text",
    "params_text",
    "rng_flops_text",
    "summary",
]
