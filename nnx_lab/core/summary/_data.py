"""What a summary is made of: plain data (:class:`Summary`, :class:`SummaryRow`), and its text and HTML."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

from ..offers import offer
from ..render import CELL_STYLE
from ..text import clip
from ._formats import bytes_text, count_text, params_count, params_text, variables_text
from ._memory import NOT_COMPUTED, PENDING

#: Functions ``(summary) -> zero-argument callable that displays it | None``, asked when IPython
#: displays a Summary (``nnx_lab.widgets.summary`` adds the widget's): core stays free of widgets.
DISPLAY_HOOKS: list = []
#: Functions ``(summary) -> zero-argument callable returning the object to show | None``, asked when
#: marimo displays a Summary (its ``_display_`` protocol; ``nnx_lab.widgets.summary`` adds the widget's).
MARIMO_HOOKS: list = []


class SummaryError(ValueError):
    """A summary that cannot be made, said in one line (IPython shows it without a traceback)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


@dataclasses.dataclass
class SummaryRow:
    """One module call (or one layer of a stacked module: ``layer`` set). Costs include the calls inside."""

    path: str  # ``blocks[0].attn``, ``embed.attend``, ``drop (call 2)``; "" for the model
    module_path: tuple
    cls: str
    method: str
    call: int  # the k-th call of this module's method
    depth: int
    inputs: str
    outputs: str
    params_own: dict  # variable type -> [count, bytes], the module's own Variables
    params_total: dict  # the same with every submodule's
    flops: int
    transcendentals: int
    bytes_accessed: int
    output_bytes: int
    backward_flops: int | None = None
    backward_bytes: int | None = None
    layers: int | None = None  # a stacked module's row: how many layers
    layer: int | None = None  # a layer's row: its index
    rng_flops: int = 0  # of ``flops``, those that generate random bits (jax.random: a dropout mask)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Summary:
    """Every module call of one model call: ``rows`` in call order, totals, peak memory (XLA's memory
    analysis of the whole program; None with ``memory_note`` saying why when unavailable). The peak
    memory needs one compile of the whole program, made when ``memory`` is first read (or on a thread
    by the widget: ``peak``, a :class:`~._memory.PeakMemory`), not by ``summary()`` itself."""

    model_class: str
    method: str
    rows: list
    flops: int
    transcendentals: int
    bytes_accessed: int
    backward_flops: int | None
    backward_bytes: int | None
    backend: str
    uncosted: dict
    inputs: str
    #: The Variable types that are parameters (``nnx.Param`` and its subclasses): the params column
    #: counts these; batch statistics and RNG state are listed beside it, never added in.
    param_types: tuple = ()
    seconds: float = dataclasses.field(default=0.0, compare=False)
    peak: Any = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def memory(self) -> dict | None:
        """XLA's memory analysis in bytes (argument, output, temp, alias, generated_code, peak), or None.
        The first read compiles the program (blocking) unless the widget's thread already has."""
        return self.peak.result()[0] if self.peak is not None else None

    @property
    def memory_note(self) -> str | None:
        """Why ``memory`` is None (unavailable, or not computed: ``memory=False``)."""
        return self.peak.result()[1] if self.peak is not None else NOT_COMPUTED

    @property
    def params(self) -> dict:
        """variable type -> [count, bytes] over the whole model."""
        return self.rows[0].params_total if self.rows else {}

    def row_params(self, row: SummaryRow) -> tuple[int, int]:
        """(count, bytes) of the parameters under ``row``'s module: ``nnx.Param`` and its subclasses."""
        return params_count(row.params_total, self.param_types)

    def row_params_text(self, row: SummaryRow) -> str:
        """The params cell: ``count (bytes)`` of the parameters, "" for a module that has none."""
        return params_text(row.params_total, self.param_types)

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity: forward FLOPs per byte accessed."""
        return self.flops / self.bytes_accessed if self.bytes_accessed else None

    def __getitem__(self, path: str) -> SummaryRow:
        for row in self.rows:
            if row.path == path:
                return row
        raise KeyError(f"no row {path!r}")

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("rows", "peak")}
        out["memory"], out["memory_note"] = self.memory, self.memory_note
        out["rows"] = [r.to_dict() for r in self.rows]
        out["params"], out["intensity"] = self.params, self.intensity
        return out

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Summary.to_pandas needs pandas: pip install pandas") from None
        records = []
        for r in self.rows:
            rec = {k: v for k, v in r.to_dict().items() if k not in ("params_own", "params_total")}
            rec["params"], rec["param_bytes"] = self.row_params(r)
            records.append(rec)
        return pd.DataFrame.from_records(records)

    # -- display -------------------------------------------------------------------------------------
    def header_lines(self, wait: bool = True) -> list[str]:
        """The header's lines; ``wait=False`` says the peak memory is being computed instead of
        compiling for it (what the widget shows until its thread is done)."""
        params = variables_text(self.params, self.param_types) or "none"
        lines = [
            f"{self.model_class}.{self.method}{_paren(self.inputs)} on {self.backend}",
            f"FLOPs {count_text(self.flops)} forward"
            + (f", {count_text(self.backward_flops)} backward" if self.backward_flops is not None else "")
            + f"; bytes accessed {bytes_text(self.bytes_accessed)}; transcendentals {count_text(self.transcendentals)}; "
            + (f"arithmetic intensity {self.intensity:.2f} FLOP/byte" if self.intensity else "arithmetic intensity -"),
            f"Variables: {params}",
        ]
        if not wait and self.peak is not None and not self.peak.ready:
            lines.append(f"Peak memory: {PENDING}")
        elif self.memory:
            m = self.memory
            lines.append(
                f"Peak memory per device (XLA memory analysis of the {'gradient' if self.backward_flops is not None else 'forward'} program): "
                f"{bytes_text(m['peak'])} = arguments {bytes_text(m['argument'])} + outputs {bytes_text(m['output'])} "
                f"+ temporaries {bytes_text(m['temp'])} - aliased {bytes_text(m['alias'])}"
            )
        else:
            note = self.memory_note  # (a str: memory is None)
            lines.append(
                f"Peak memory: {note}"
                if note is not None and note.startswith("not computed")
                else f"Peak memory: unavailable ({note})"
            )
        if self.uncosted:
            ops = ", ".join(f"{k} x{v}" for k, v in sorted(self.uncosted.items()))
            lines.append(f"Not costed (XLA could not analyse them alone): {ops}")
        return lines

    def _columns(self) -> list[tuple[str, Any]]:
        cols = [
            ("path", lambda r: "  " * r.depth + (r.path if r.path else f"({self.model_class})")),
            ("class", lambda r: r.cls),
            ("inputs", lambda r: r.inputs),
            ("outputs", lambda r: r.outputs),
            ("params", self.row_params_text),
            ("FLOPs", lambda r: count_text(r.flops) + (RNG_MARK if r.rng_flops else "")),
        ]
        if self.backward_flops is not None:
            cols.append(("bwd FLOPs", lambda r: count_text(r.backward_flops)))
        cols += [
            ("bytes accessed", lambda r: bytes_text(r.bytes_accessed)),
            ("output", lambda r: bytes_text(r.output_bytes)),
        ]
        return cols

    def to_text(self, wait: bool = True) -> str:
        """The compact table (``str(summary)``); ``wait`` as in :meth:`header_lines`."""
        cols = self._columns()
        table = [[name for name, _ in cols]] + [[clip(fn(r), 60) for _, fn in cols] for r in self.rows]
        widths = [max(len(line[i]) for line in table) for i in range(len(cols))]
        right = {"params", "FLOPs", "bwd FLOPs", "bytes accessed", "output"}
        out = self.header_lines(wait)
        for i, line in enumerate(table):
            cells = [c.rjust(w) if cols[j][0] in right else c.ljust(w) for j, (c, w) in enumerate(zip(line, widths))]
            out.append(" | ".join(cells).rstrip())
            if i == 0:
                out.append("-+-".join("-" * w for w in widths))
        note = self.rng_note()
        return "\n".join(out + ([note] if note else []))

    __str__ = to_text

    def rng_note(self) -> str | None:
        """The footnote of the FLOPs marked ``*``: how many generate random bits, and where."""
        rows = self.rows
        # (class, random-bit FLOPs) -> (path, FLOPs): alike calls whose totals differ by XLA's rounding
        # (a ViT's Dropouts: 187,032 and 187,031) are still one clause
        where: dict[tuple[str, int], list[tuple[str, int]]] = {}
        for i, r in enumerate(rows):
            if not r.rng_flops or r.layer is not None:
                continue
            inner = 0  # calls inside it with random bits: named instead of it
            for q in rows[i + 1 :]:
                if q.depth <= r.depth:
                    break
                if q.layer is None and q.depth == r.depth + 1:
                    inner += q.rng_flops
            if inner < r.rng_flops:
                where.setdefault((r.cls, r.rng_flops), []).append((r.path or self.model_class, r.flops))
        if not where:
            return None
        parts = []
        for (cls, rng), calls in where.items():  # alike calls (a model's Dropouts) said once
            paths = [path for path, _ in calls]
            low, high = min(f for _, f in calls), max(f for _, f in calls)
            if len(paths) == 1:
                parts.append(f"{paths[0]} ({cls}): {rng:,} of its {high:,}")
            else:
                named = ", ".join(paths[:RNG_NAMED]) + (
                    f" and {len(paths) - RNG_NAMED} more" if len(paths) > RNG_NAMED else ""
                )
                total = f"{high:,}" if low == high else f"{low:,}–{high:,}"
                parts.append(f"{len(paths)} {cls} calls, {rng:,} of their {total} each: {named}")
        return f"{RNG_MARK} {RNG_WHY}: " + "; ".join(parts)

    def __repr__(self) -> str:
        return f"<Summary {self.model_class}.{self.method}: {len(self.rows)} rows, {count_text(self.flops)} FLOPs>"

    @property
    def _ipython_display_(self) -> Any:
        """What a display hook offers (the widget in a Jupyter kernel: ``nnx_lab.widgets.summary`` adds
        it), else None: IPython then shows ``_repr_html_`` and ``__repr__`` as usual."""
        return offer(DISPLAY_HOOKS, self)

    @property
    def _display_(self) -> Any:
        """marimo's display protocol: what a hook offers (the widget, which marimo shows through its
        anywidget support), else None: marimo then shows ``_repr_html_``."""
        return offer(MARIMO_HOOKS, self)

    def to_html(self, wait: bool = True) -> str:
        """Static HTML (every string escaped) that a saved notebook keeps; ``wait`` as in :meth:`header_lines`."""
        cols = self._columns()
        esc = html.escape
        head = "".join(f"<div>{esc(line)}</div>" for line in self.header_lines(wait))
        total = max(self.flops, 1)
        body = []
        for r in self.rows:
            share = 100.0 * r.flops / total
            cells = []
            for name, fn in cols:
                text = esc(str(fn(r)).strip() if name == "path" else str(fn(r)))
                if name == "path":
                    cells.append(
                        f'<td style="{CELL_STYLE};padding-left:{0.3 + 1.2 * r.depth:.1f}em;text-align:left">{text}</td>'
                    )
                elif name == "FLOPs":
                    cells.append(
                        f'<td style="text-align:right;{CELL_STYLE};background:linear-gradient(90deg,'
                        f'rgba(66,133,244,.25) {share:.1f}%,transparent {share:.1f}%)">{text}</td>'
                    )
                else:
                    cells.append(
                        f'<td style="text-align:{"left" if name in ("class", "inputs", "outputs") else "right"};{CELL_STYLE}">{text}</td>'
                    )
            body.append("<tr>" + "".join(cells) + "</tr>")
        header = "".join(f'<th style="{CELL_STYLE}">{esc(name)}</th>' for name, _ in cols)
        note = self.rng_note()
        foot = f'<div class="nnx-sum-note">{esc(note)}</div>' if note else ""
        return (
            f'<div class="nnx-lab-summary">{head}<table style="border-collapse:collapse;font-family:monospace">'
            f"<thead><tr>{header}</tr></thead><tbody>{''.join(body)}</tbody></table>{foot}</div>"
        )

    _repr_html_ = to_html


#: marks a FLOPs figure that includes random-bit generation; the footnote (``Summary.rng_note``) says why
RNG_MARK = "*"
#: paths the footnote names for alike calls; the rest are counted
RNG_NAMED = 3
RNG_WHY = "includes random-bit generation (jax.random's threefry hash, e.g. a Dropout's mask), FLOPs as XLA counts them"


def rng_flops_text(row: SummaryRow) -> str:
    """A row's FLOPs of random-bit generation in words (the widget's tooltip); "" for none."""
    if not row.rng_flops:
        return ""
    return (
        f"{row.rng_flops:,} of these {row.flops:,} FLOPs generate random bits "
        "(jax.random's threefry hash, e.g. a Dropout's mask), as XLA counts them"
    )


def _paren(text: str) -> str:
    return text if text.startswith("(") else f"({text})"
