"""The NaN/Inf alert of a live viewer (docs/guide/watch.md's banner): the first row (parameter,
gradient, optimizer state) or logged scalar seen NaN or Inf, with its step and refresh, kept until
:meth:`NonfiniteAlert.clear`; later refreshes only update what is non-finite *now*.

>>> import jax.numpy as jnp
>>> from nnx_lab import snapshot
>>> alert = NonfiniteAlert()
>>> alert.observe(snapshot({"bias": jnp.zeros(2)}), refresh=1, step=10)
False
>>> alert.observe(snapshot({"bias": jnp.array([0.0, jnp.nan])}), refresh=2, step=20)
True
>>> _ = alert.observe(snapshot({"bias": jnp.zeros(2)}), refresh=3, step=30)
>>> alert.text()
'first NaN at step 20 (refresh 2) in bias; now clean'
>>> d = alert.to_dict()  # for the browser: the numbers, and the sentence in three parts
>>> {k: d[k] for k in ("step", "refresh", "where", "source", "nan", "inf", "now_variables", "now_scalars")}
{'step': 20, 'refresh': 2, 'where': 'bias', 'source': 'variable', 'nan': 1, 'inf': 0, 'now_variables': 0, 'now_scalars': []}
>>> d["head"] + d["where"] + d["tail"] == alert.text()
True
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, cast

import numpy as np

from ..graph import path_text
from ..render import count_noun
from ._series_columns import COUNTS, SeriesColumns

if TYPE_CHECKING:
    from ..snapshot import Snapshot


class NonfiniteAlert:
    def __init__(self) -> None:
        self.first: dict | None = None
        self.now_variables = 0  # rows holding NaN/Inf in the latest snapshot
        self.now_scalars: list[str] = []  # scalars whose latest value is NaN/Inf
        self._clean_step: int | None = None  # the step of the last refresh that saw no NaN/Inf

    def observe(
        self,
        snap: Snapshot,
        *,
        refresh: int,
        step: int,
        scalar: tuple[int, str, float] | None = None,
        scalars_now: Iterable[str] = (),
    ) -> bool:
        """Take in a published snapshot (dispatched after ``step`` ticks) and the earliest non-finite
        ``scalar`` (step, name, value) read with it; True when the alert or its "now" changed."""
        before = self.to_dict()
        counts = np.nan_to_num(snap.stat_matrix[:, COUNTS])  # columns: no row dicts built per refresh
        bad = np.flatnonzero((counts.sum(axis=1) > 0) & ~snap.layer_rows)  # a layer: its Variable says it
        self.now_variables = int(bad.size)
        self.now_scalars = list(scalars_now)
        if self.first is None:
            candidates = []
            if scalar is not None:  # a loss computed during a step comes before the update it drove
                s_step, name, value = scalar
                candidates.append((s_step, 0, _where(name, "scalar", math.isnan(value), math.isinf(value))))
            if bad.size:
                i = int(bad[0])
                candidates.append((step, 1, _where(path_text(snap.paths[i]), "variable", *counts[i])))
            candidates.extend(_series_candidates(snap, step))
            if candidates:
                first_step, _, where = min(candidates, key=lambda c: c[:2])
                self.first = {"step": int(first_step), "refresh": int(refresh), **where}
                # A refresh at this very step saw every value finite: no step of the loop made the NaN/Inf
                # (another cell, another viewer's loop changed the arrays); its step only bounds it.
                outside = where["source"] == "variable" and step > 0 and self._clean_step == step
                self.first["outside"] = outside
        if not (bad.size or self.now_scalars or scalar is not None):
            self._clean_step = step
        return self.to_dict() != before

    def clear(self) -> None:
        """Forget the alert; the next NaN/Inf seen sets it again."""
        self.first = None

    def to_dict(self) -> dict:
        """The alert as plain data for the browser; ``{}`` when none. Its sentence comes along in
        three parts (``head``, ``where``, ``tail``: the front end sets ``where`` in code type), so
        it is written once, here."""
        if self.first is None:
            return {}
        head, _, tail = self.parts()
        return {
            **self.first,
            "now_variables": self.now_variables,
            "now_scalars": list(self.now_scalars),
            "head": head,
            "tail": tail,
        }

    def parts(self) -> tuple[str, str, str]:
        """The one line as (before the place, the place, after it); empty strings when none."""
        a = self.first
        if a is None:
            return "", "", ""
        kind = "NaN" if a["nan"] and not a["inf"] else "Inf" if a["inf"] and not a["nan"] else "NaN/Inf"
        when = f"at step {a['step']:,} (refresh {a['refresh']:,})" if a["step"] else f"at refresh {a['refresh']:,}"
        outside = ""
        if a.get("outside"):  # step S's own refresh was clean: say what is known, not "at step S"
            when = f"seen at refresh {a['refresh']:,}, after step {a['step']:,},"
            outside = "; the values changed outside this viewer's loop"
        now = [count_noun(self.now_variables, "variable")] if self.now_variables else []
        now.extend(self.now_scalars)
        return (
            f"first {kind} {when} in ",
            str(a["where"]),
            outside + "; " + (f"now in {', '.join(now)}" if now else "now clean"),
        )

    def text(self) -> str:
        """One line: "first NaN at step 1,234 (refresh 17) in blocks[3].kernel; now clean" ("" when none)."""
        return "".join(self.parts())


def _series_candidates(snap: Snapshot, step: int) -> list:
    """The first row with a NaN/Inf in each fresh series of ``snap`` (gradients, optimizer state:
    ``snap.series``, see ``_series.py``): a gradient at a step comes before the parameters it made."""
    series = cast("SeriesColumns | None", snap.series)  # set by core.training (core.snapshot does not import it)
    out = []
    if series is None:
        return out
    for name in series.names:
        if name in series.stale:
            continue
        counts = np.nan_to_num(series.matrices[name][:, COUNTS])
        bad = np.flatnonzero(counts.sum(axis=1) > 0)
        if bad.size:
            i = int(bad[0])
            where = _where(f"{name} of {path_text(snap.paths[i])}", name, *counts[i])
            out.append((series.steps.get(name, step), 0.5, where))
    return out


def _where(where: str, source: str, nan: float, inf: float) -> dict:
    return {"where": where, "source": source, "nan": int(nan), "inf": int(inf)}
