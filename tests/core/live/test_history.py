"""The viewer's history of statistics (nnx_lab.core.live._history)."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
from flax import nnx

import nnx_lab
from nnx_lab.core.live._history import History
from nnx_lab.core.stats import STAT_NAMES


class Masked(nnx.Module):
    """Gemma's sown attention logits hold its mask value, -2.38e38: finite float32 numbers whose norm
    (here sqrt(8) * 2.38e38) is beyond float32's range."""

    def __init__(self):
        self.logits = nnx.Intermediate(jnp.full((8,), -2.3819763e38, jnp.float32))
        self.w = nnx.Param(jnp.arange(4.0))


def test_a_norm_beyond_float32_is_kept_without_a_warning():
    model = Masked()
    snap = nnx_lab.snapshot(model)
    norm = snap["logits"].stats["norm"]
    assert norm > float(np.finfo(np.float32).max)  # the snapshot itself has the exact value
    h = History(capacity=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before: RuntimeWarning: overflow encountered in cast
        h.append(snap)
        h.append(snap)
    i = snap.paths.index(("logits",))
    # float32 cannot carry it: +inf, as the front end's float32 ring holds it (a gap in the sparkline)
    assert np.isposinf(h.series("norm")[i]).all()
    # the other statistics of that row, and the other rows, are exact as before
    assert h.series("min")[i].tolist() == [np.float32(-2.382e38)] * 2
    j = 1 - i
    assert np.allclose(h.series("norm")[j], np.linalg.norm(np.arange(4.0)), rtol=1e-3)


def test_the_viewer_stats_message_carries_a_norm_beyond_float32_exactly_without_a_warning():
    snap = nnx_lab.snapshot(Masked())
    i = snap.paths.index(("logits",))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before: RuntimeWarning: overflow encountered in cast
        buffer, exact = snap.stats_buffer()
    k = STAT_NAMES.index("norm")
    assert np.frombuffer(buffer, np.float32).reshape(len(STAT_NAMES), -1)[k, i] == np.inf
    # the exact value travels beside the buffer (4 significant digits, as the table shows it)
    assert exact[i][k] == 6.737e38
