""":class:`Comparison`: the result of ``compare(a, b)`` as plain data, with a one-line verdict."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from typing import Any

from ..graph import Path
from ..offers import offer
from ._rows import CompareRow, ModuleRow

__all__ = ["DISPLAY_HOOKS", "MARIMO_HOOKS", "Comparison", "verdict"]

#: ``nnx_lab.widgets.compare`` adds the widget's hooks (``core.offers``): core stays free of widgets.
DISPLAY_HOOKS: list = []
MARIMO_HOOKS: list = []


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def verdict(rows: Sequence[CompareRow]) -> str:
    """``b loads into a: 0 missing, 0 unexpected, 2 shape mismatches; values: ...`` in one line."""
    top = [r for r in rows if r.layer is None]
    count = collections.Counter(r.status for r in top)
    text = (
        f"b loads into a: {count['missing']} missing, {count['unexpected']} unexpected, "
        f"{_plural(count['shape'], 'shape mismatch', 'shape mismatches')}"
    )
    kinds = collections.Counter(part.split(" ")[0] for r in top if r.mismatch for part in r.mismatch.split("; "))
    extra = [_plural(kinds[k], f"{k} mismatch", f"{k} mismatches") for k in ("dtype", "type", "sharding") if kinds[k]]
    if count["tied"]:
        extra.append(_plural(count["tied"], "tied weight", "tied weights") + " on one side only")
    if count["error"]:
        extra.append(_plural(count["error"], "unreadable array", "unreadable arrays"))
    if extra:
        text += ", " + ", ".join(extra)
    values = [f"{count['identical']} identical"]
    if count["equal"]:
        values.append(f"{count['equal']} equal within tol")
    values.append(f"{count['changed']} changed")
    if count["nan"]:
        values.append(f"{count['nan']} with NaN")
    skipped = sum(count[s] for s in ("abstract", "tracer", "non_numeric", "deleted"))
    if count["prng_key"]:
        keys = [r for r in top if r.status == "prng_key"]
        same = sum(1 for r in keys if r.identical)
        said = "identical" if same == len(keys) else "changed" if same == 0 else f"{len(keys) - same} changed"
        values.append(_plural(len(keys), "PRNG key", "PRNG keys") + f" ({said})")
    if skipped:
        values.append(f"{skipped} not compared")
    return text + "; values: " + ", ".join(values)


class Comparison:
    """What differs between two models, checkpoints or states: plain data.

    ``rows`` (:class:`CompareRow`, one per Variable, structural problems first, then by relative
    change, a stacked Variable's layers after it), ``modules`` (:class:`ModuleRow`, per container),
    ``verdict`` (one line), ``counts`` (rows per status), ``tol``; ``to_dict()``, ``to_pandas()``,
    ``str()`` (a text table) and ``_repr_html_()`` (static HTML a saved notebook keeps).
    ``comparison["layers[0].kernel"]`` is that path's row.
    """

    def __init__(self, rows: Sequence[CompareRow], modules: Sequence[ModuleRow], info: dict):
        self.rows = tuple(rows)
        self.modules = tuple(modules)
        self.tol = info["tol"]
        self.a_type, self.b_type = info["a_type"], info["b_type"]
        self.elapsed_s = info["elapsed_s"]
        self.paths: dict[str, Path] = info["paths"]  # a row's path text -> its keys (the widget's tree)
        self.verdict = verdict(self.rows)
        self.counts = dict(collections.Counter(r.status for r in self.rows if r.layer is None))

    @property
    def identical(self) -> bool:
        """Whether every Variable matched and is bit for bit the same."""
        return bool(self.rows) and all(r.identical is True for r in self.rows if r.layer is None)

    @property
    def loadable(self) -> bool:
        """Whether b loads into a: no path missing or unexpected, no shape mismatch."""
        return not any(r.status in ("missing", "unexpected", "shape") for r in self.rows)

    def changed(self) -> list[CompareRow]:
        """The rows whose values changed (beyond tol), largest relative change first."""
        return [r for r in self.rows if r.status in ("changed", "nan") and r.layer is None]

    def __getitem__(self, path: str) -> CompareRow:
        for r in self.rows:
            if r.path == path or r.path_b == path:
                return r
        raise KeyError(path)

    def __len__(self) -> int:
        return len(self.rows)

    def to_dict(self) -> dict:
        """Plain JSON-able data: the verdict, counts, rows and modules (non-finite numbers as None)."""
        return {
            "verdict": self.verdict,
            "tol": self.tol,
            "a_type": self.a_type,
            "b_type": self.b_type,
            "counts": self.counts,
            "rows": [_plain(dataclasses.asdict(r)) for r in self.rows],
            "modules": [_plain(dataclasses.asdict(m)) for m in self.modules],
        }

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (an ImportError in one line without pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Comparison.to_pandas() needs pandas (pip install pandas); "
                "Comparison.to_dict()['rows'] is the same data"
            ) from None
        return pd.DataFrame([dataclasses.asdict(r) for r in self.rows])

    def to_text(self, max_rows: int | None = 50) -> str:
        from ._render import text_table

        return text_table(self, max_rows=max_rows)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<Comparison {self.a_type} vs {self.b_type}: {self.verdict}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython's text/plain: the table
        printer.text(self.to_text())

    def _repr_html_(self) -> str:
        from ._render import html_table

        return html_table(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict | None:
        """The widget where a hook offers one (a Jupyter kernel), else None: IPython then asks
        ``_repr_pretty_`` (the text table) and ``_repr_html_`` (the static table)."""
        return offer(DISPLAY_HOOKS, self) or None

    @property
    def _display_(self) -> Any:
        """marimo's display protocol: what a hook offers (the widget, which marimo shows through its
        anywidget support), else None: marimo then shows ``_repr_html_``."""
        return offer(MARIMO_HOOKS, self)


def _plain(d: dict) -> dict:
    import math

    out = {}
    for k, v in d.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out
