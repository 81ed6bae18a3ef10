"""What ``find_nonfinite`` found: plain data, text and HTML (every user string escaped)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.typing import ArrayLike

from ..offers import offer
from ..render import count_noun, format_shape, format_stat, pre_html
from ._record import is_float

#: functions ``report -> displayable or None``, asked in order when a report is displayed
#: (``nnx_lab.widgets.nonfinite`` adds the widget's, for a Jupyter kernel)
DISPLAY_HOOKS: list = []
#: functions ``report -> zero-argument callable returning the object to show | None``, asked when marimo
#: displays a report (its ``_display_`` protocol; ``nnx_lab.widgets.nonfinite`` adds the widget's)
MARIMO_HOOKS: list = []


#: the most elements one reduction describes; a larger leaf is described piece by piece along its
#: leading axes. It bounds the reduction's temporaries (XLA may keep a float32 copy and masks per
#: element: 28 bytes each on CPU) and keeps its int32 counts and flat index exact (jax without x64).
PIECE = 2**24


def _describe(x: jax.Array) -> tuple[jax.Array, ...]:
    """A leaf's description, reduced where it lives: min, max and mean of its finite values, their
    count, NaN, +Inf and -Inf counts, and the flat index of its first non-finite element."""
    x = jnp.abs(x) if jnp.iscomplexobj(x) else x.astype(jnp.float32) if x.dtype.itemsize < 4 else x
    finite = jnp.isfinite(x)
    count = finite.sum()
    mean = jnp.where(finite, x, 0).sum(dtype=jnp.float32) / jnp.maximum(count, 1)
    bad = ~finite.ravel()
    return (
        jnp.where(finite, x, jnp.inf).min(initial=jnp.inf),
        jnp.where(finite, x, -jnp.inf).max(initial=-jnp.inf),
        mean,
        count,
        jnp.isnan(x).sum(),
        (x == jnp.inf).sum(),
        (x == -jnp.inf).sum(),
        jnp.argmax(bad) if bad.size else jnp.zeros((), jnp.int32),
    )


_described = jax.jit(_describe)


@functools.partial(jax.jit, static_argnums=(3,))
def _described_piece(x: jax.Array, index: tuple, start: jax.Array, rows: int) -> tuple[jax.Array, ...]:
    """The description of ``x[index][start:start + rows]``, sliced inside the reduction (no copy)."""
    for i in index:
        x = x[i]
    return _describe(jax.lax.dynamic_slice_in_dim(x, start, rows))


def _pieces(shape: tuple[int, ...], index: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], int, int]]:
    """``(index, start, rows)``: the pieces ``x[index][start:start + rows]`` of fewer than :data:`PIECE`
    elements that cut an array of ``shape`` along its leading axes, in order."""
    rest = shape[len(index) :]
    row = math.prod(rest[1:])
    if row >= PIECE:  # one row is too large: each row cut in turn
        return [piece for i in range(rest[0]) for piece in _pieces(shape, (*index, i))]
    step = (PIECE - 1) // row
    return [(index, start, min(step, rest[0] - start)) for start in range(0, rest[0], step)]


def leaf_stats(name: str, x: ArrayLike) -> dict:
    """Shape, dtype, min/max/mean of the finite values, NaN and Inf counts, first bad index: reduced
    on the leaf's devices, only these numbers fetched (never the array itself)."""
    shape = tuple(np.shape(x))
    dtype = str(getattr(x, "dtype", None) or np.asarray(x).dtype)  # a Python float: float64
    x = jnp.asarray(x)
    if x.size < PIECE:
        pieces, described = [((), 0, shape[0] if shape else 0)], jax.device_get([_described(x)])
    else:  # one reduction per piece: bounded temporaries, no int32 overflow
        pieces = _pieces(shape)
        described = jax.device_get([_described_piece(x, index, start, rows) for index, start, rows in pieces])
    count = nan = posinf = neginf = 0
    lo, hi, total, first = math.inf, -math.inf, 0.0, None
    for (index, start, rows), (p_lo, p_hi, p_mean, p_count, p_nan, p_pos, p_neg, p_first) in zip(pieces, described):
        if int(p_count):
            lo, hi, total = min(lo, float(p_lo)), max(hi, float(p_hi)), total + float(p_mean) * int(p_count)
        count, nan, posinf, neginf = count + int(p_count), nan + int(p_nan), posinf + int(p_pos), neginf + int(p_neg)
        if first is None and int(p_nan) + int(p_pos) + int(p_neg):
            # the piece's flat index: its row offset by the piece's start, under the fixed leading indices
            at = [int(i) for i in np.unravel_index(int(p_first), (rows, *shape[len(index) + 1 :]))] if shape else []
            first = (*index, at[0] + start, *at[1:]) if shape else ()
    bad = nan + posinf + neginf
    return {
        "name": name,
        "shape": shape,
        "dtype": dtype,
        "min": lo if count else None,
        "max": hi if count else None,
        "mean": total / count if count else None,
        "nan": nan,
        "inf": posinf + neginf,
        "posinf": posinf,
        "neginf": neginf,
        "bad": bad,
        "first_bad": first if bad else None,
    }


def tree_stats(prefix: str, tree: object) -> list[dict]:
    out = []
    for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if is_float(x) and not isinstance(x, Tracer):
            out.append(leaf_stats(prefix + jax.tree_util.keystr(path), x))
    return out


def _finite_stats(s: dict) -> str:
    return f"min {format_stat(s['min'])}  max {format_stat(s['max'])}  mean {format_stat(s['mean'])}"


def _stat_line(s: dict) -> str:
    line = f"{s['name']}: {format_shape(s['shape'])} {s['dtype']}"
    line += f"  {_finite_stats(s)}" if s["min"] is not None else "  no finite value"
    if s["bad"]:
        # an Inf's sign says which way it overflowed: each sign counted when there is one
        signs = [f"{sign}Inf {s[key]}" for sign, key in (("+", "posinf"), ("-", "neginf")) if s.get(key)]
        line += f"  NaN {s['nan']}  {'  '.join(signs) or 'Inf 0'}  first bad at {s['first_bad']}"
    return line


def _kinds(s: dict) -> str:
    """A leaf's bad values by kind, the kinds it has: ``'3 NaN'``, ``'1 NaN, 2 +Inf, 1 -Inf'``."""
    kinds = [f"{s[key]:,} {label}" for key, label in (("nan", "NaN"), ("posinf", "+Inf"), ("neginf", "-Inf")) if s[key]]
    return ", ".join(kinds) or "no NaN/Inf"


def _input_line(s: dict) -> str:
    """One bad argument leaf: ``args[1]: 3 NaN of 4,096 in (32, 128) float32, first bad at (0, 17);
    finite values min -2.1  max 2.3  mean 0.01``."""
    if not s["shape"]:  # a scalar: float("inf"), a 0-d array
        return f"{s['name']}: {_kinds(s).removeprefix('1 ')}, a {s['dtype']} scalar"
    line = f"{s['name']}: {_kinds(s)} of {math.prod(s['shape']):,} in {format_shape(s['shape'])} {s['dtype']}"
    if s["first_bad"] is not None:
        line += f", first bad at {s['first_bad']}"
    return line + (f"; finite values {_finite_stats(s)}" if s["min"] is not None else "; no finite value")


def _rest_line(rest: list[str]) -> str:
    """The bad argument leaves past the described ones: all named up to :data:`NAMED_REST`, then the first of them."""
    if len(rest) <= NAMED_REST:
        return f"and {len(rest):,} more: {', '.join(rest)}"
    return f"and {len(rest):,} more, the first {NAMED_REST}: {', '.join(rest[:NAMED_REST])}"


#: the bad argument leaves named past the described ones (the text and the widget say how many more)
NAMED_REST = 20

#: the input verdict's table: (payload key, column label)
INPUT_COLUMNS = (
    ("name", "argument"),
    ("array", "array"),
    ("bad", "bad"),
    ("nan", "NaN"),
    ("posinf", "+Inf"),
    ("neginf", "-Inf"),
    ("first", "first bad at"),
    ("finite", "finite values"),
)
#: the forward and backward verdicts' table of the culprit's bad inputs and outputs
BAD_COLUMNS = (("name", "value"), ("nan", "NaN"), ("inf", "Inf"), ("first", "first bad at"))


def _input_row(s: dict) -> dict[str, str]:
    return {
        "name": s["name"],
        "array": f"{format_shape(s['shape'])} {s['dtype']}",
        "bad": f"{s['bad']:,} of {math.prod(s['shape']):,}",
        "nan": f"{s['nan']:,}",
        "posinf": f"{s['posinf']:,}",
        "neginf": f"{s['neginf']:,}",
        "first": str(s["first_bad"]) if s["shape"] and s["first_bad"] is not None else "",
        "finite": _finite_stats(s) if s["min"] is not None else "no finite value",
    }


_WHAT = {
    "forward": "the forward pass first produced NaN/Inf in",
    "backward": "the backward pass first produced NaN/Inf in the gradient of",
    "input": "the NaN/Inf values were already in {where}",
}


@dataclasses.dataclass
class NonfiniteReport:
    """Where NaN/Inf first appeared in one run of ``fn``: ``direction`` is ``'forward'``,
    ``'backward'``, ``'input'``, or None when everything was finite."""

    direction: str | None
    module_path: str | None = None
    module_class: str | None = None
    method: str | None = None
    occurrence: int = 0  # how many calls of that module and method came before (a scan's layer index)
    primitive: str | None = None
    primitive_chain: list[str] = dataclasses.field(default_factory=list)
    source: str | None = None
    inputs: list[dict] = dataclasses.field(default_factory=list)
    outputs: list[dict] = dataclasses.field(default_factory=list)
    bad_variables: list[str] = dataclasses.field(default_factory=list)
    bad_leaves: list[str] = dataclasses.field(default_factory=list)
    calls: int = 0
    note: str = ""
    #: the module calls from the outermost to the culprit: path, class, method, inputs, outputs
    #: (forward values' statistics) and the non-finite Variables each read
    path_calls: list[dict] = dataclasses.field(default_factory=list)
    #: what the ``'input'`` verdict says held the values (``%%nnx_nonfinite model``: "model's Variables")
    input_where: str = "fn's arguments"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def _undescribed(self) -> list[str]:
        """The bad argument leaves the input verdict names without describing them."""
        described = {st["name"] for st in self.inputs}
        return [leaf for leaf in self.bad_leaves if leaf not in described]

    def to_text(self) -> str:
        if self.direction is None:
            return f"find_nonfinite: everything finite ({count_noun(self.calls, 'module call')}). {self.note}".strip()
        what = _WHAT[self.direction].format(where=self.input_where)
        lines = [f"find_nonfinite: {what}" + (":" if self.direction == "input" else "")]
        if self.direction == "input":  # each bad leaf described (the first _search.INPUT_LEAVES), then the rest named
            lines += [f"  {_input_line(st)}" for st in self.inputs]
            if rest := self._undescribed():
                lines.append(f"  {_rest_line(rest)}")
        else:
            if self.module_path is not None:
                where = f"{self.module_path or '(root)'} ({self.module_class}.{self.method}"
                where += (
                    f", its call #{self.occurrence} from 0: in nnx.scan, the layer index)" if self.occurrence else ")"
                )
                lines[0] += f" {where}"
            else:
                lines[0] = (
                    f"find_nonfinite: the {self.direction} pass first produced NaN/Inf in fn's own code, outside any module call"
                )
            if self.primitive:
                via = " > ".join(self.primitive_chain[:-1])
                lines.append(f"  primitive: {self.primitive}" + (f" (inside {via})" if via else ""))
            if self.source:
                lines.append(f"  source: {self.source}")
            kind = "cotangent " if self.direction == "backward" else ""
            lines += [f"  input {kind}{_stat_line(s)}" for s in self.inputs]
            lines += [f"  output {kind}{_stat_line(s)}" for s in self.outputs]
            if self.bad_variables:
                what = "gradients" if self.direction == "backward" else "Variables"
                lines.append(f"  non-finite {what}: " + ", ".join(self.bad_variables))
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)

    __str__ = to_text
    __repr__ = to_text

    def _repr_html_(self) -> str:
        return pre_html(self.to_text(), ' class="nnx-lab-nonfinite"')

    @property
    def _ipython_display_(self) -> Callable[[], object] | None:
        """The first display hook's answer (the widget in a Jupyter kernel), else None: IPython then
        shows ``_repr_html_`` and the text."""
        return offer(DISPLAY_HOOKS, self)

    @property
    def _display_(self) -> Callable[[], object] | None:
        """marimo's display protocol: what a hook offers (the widget, which marimo shows through its
        anywidget support), else None: marimo then shows ``_repr_html_``."""
        return offer(MARIMO_HOOKS, self)

    def payload(self) -> dict:
        """What the widget draws, every number already written here (JSON, strings only)."""
        text = self.to_text().splitlines()
        # The primitive and its source line; in the backward also the culprit's cotangents and non-finite
        # gradients, as the text says them (the table's rows hold forward values: the path's calls).
        wanted = ("primitive:", "source:")
        if self.direction == "backward":
            wanted += ("input cotangent ", "output cotangent ", "non-finite gradients:")
        lines = [line.strip() for line in text[1:] if line.strip().startswith(wanted)]
        if self.direction == "input":  # one row per described leaf; the others in one line
            bad, columns = [_input_row(s) for s in self.inputs], INPUT_COLUMNS
            lines += [_rest_line(rest)] if (rest := self._undescribed()) else []
        else:
            columns = BAD_COLUMNS
            bad = [
                {"name": s["name"], "nan": str(s["nan"]), "inf": str(s["inf"]), "first": str(s["first_bad"])}
                for s in self.inputs + self.outputs
                if s["bad"]
            ]
        rows = [
            {
                "path": c["path"],
                "call": f"{c['class']}.{c['method']}",
                "inputs": "\n".join(_stat_line(s) for s in c["inputs"]),
                "outputs": "\n".join(_stat_line(s) for s in c["outputs"]),
                "variables": ", ".join(c["bad_variables"]),
                "culprit": i == len(self.path_calls) - 1,
            }
            for i, c in enumerate(self.path_calls)
        ]
        return {
            # (finite: the one line ends with the note, which the widget shows under the verdict)
            "verdict": text[0]
            .removeprefix("find_nonfinite: ")
            .removesuffix(self.note if self.direction is None else "")
            .strip(),
            "direction": self.direction or "finite",
            "lines": lines,
            "bad": bad,
            "bad_columns": [list(c) for c in columns],
            "rows": rows,
            "bad_caption": "bad cotangent elements" if self.direction == "backward" else "bad elements",
            "note": self.note,
        }
