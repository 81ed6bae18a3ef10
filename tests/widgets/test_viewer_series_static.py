"""The series in a saved notebook's static copy of a viewer: the gradient, update-ratio and optimizer
columns the live viewer shows, the optimizer step and unmatched leaves, every string escaped."""

import html
import re

import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import nnx_lab
from nnx_lab.core.render import format_stat, summary_line, text_table
from nnx_lab.core.training import leaf_paths

EVIL = "<img src=x onerror=alert(1)>"


def norm(x):
    return float(np.sqrt((np.asarray(x, np.float64) ** 2).sum()))


def trained_viewer():
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Linear(4, 2, rngs=nnx.Rngs(1)))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    viewer = nnx_lab.watch(model, optimizer=opt, max_rate=100.0, display=False)
    for step in viewer.track(range(3)):
        grads = nnx.grad(lambda m: (m(jnp.ones((5, 3))) ** 2).mean())(model)
        opt.update(model, grads)
        viewer.log(grads=grads, updates=grads)  # (updates: as if SGD at lr 1)
        if step == 2:
            viewer.refresh()  # the last step's series, whatever the throttle did in the loop
    viewer.refresh()  # a refresh without gradients: the last ones stay, marked stale
    return model, opt, viewer


def html_cells(table_html, header):
    """The cells of the column headed ``header`` (escaped text), by the row's path."""
    rows = re.findall(r"<tr>(.*?)</tr>", table_html.split('<div style="max-height')[1])
    heads = re.findall(r"<th[^>]*>(.*?)</th>", rows[0])
    at = heads.index(html.escape(header))
    out = {}
    for row in rows[1:]:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        out[cells[0]] = cells[at]
    return out


def test_the_static_copy_has_the_series_columns_of_the_live_viewer():
    model, opt, viewer = trained_viewer()
    snap = viewer.last_snapshot
    data, _ = viewer._repr_mimebundle_()
    page = data["text/html"]
    assert data["text/plain"] == f"StateViewer · {summary_line(snap)}"  # one stable line, as before
    for header in ("‖grad‖", "‖g‖/‖θ‖", "‖Δθ‖/‖θ‖", "‖mu‖", "‖nu‖"):
        assert f">{html.escape(header)}</th>" in page
    series = snap.series
    mu = {p[p.index("mu") + 1 :]: leaf for p, leaf in zip(*leaf_paths(opt.opt_state)) if "mu" in p}
    grad_col, ratio_col, mu_col = (html_cells(page, h) for h in ("‖grad‖", "‖g‖/‖θ‖", "‖mu‖"))
    for i, row in enumerate(snap.rows):
        grad_norm = series.matrices["grad"][i, list(series.stats_dict("grad", i)).index("norm")]
        assert grad_col[row.path_text] == format_stat(grad_norm)  # what the live viewer's column says
        assert ratio_col[row.path_text] == format_stat(series.ratio("grad", snap.stat_matrix[:, 4])[i])
        assert float(mu_col[row.path_text]) == np.float64(format_stat(norm(mu[row.path])))
    assert "optimizer step 3" in page
    assert f"grad from step {series.steps['grad']:,} (none since)" in page  # the loop's end had no grads
    assert "[0].count" not in page and "matched to no" not in page  # Adam's count: the optimizer step (issue 35)
    assert series.steps["grad"] == 3


def test_unmatched_leaves_and_problems_are_text_never_html():
    model, opt, viewer = trained_viewer()
    viewer.log(grads={EVIL: jnp.ones(3), "bad": "<b>text</b>", **nnx.to_pure_dict(nnx.state(model))})
    viewer.refresh()
    page = viewer._repr_mimebundle_()[0]["text/html"]
    assert html.escape(f"grads: [{EVIL!r}] (mean 1, max 1, norm 1.732)") in page  # matched to no Variable
    assert "grads: 1 leaf not an array (str): bad" in page
    assert EVIL not in page and "<b>text" not in page


def test_a_snapshots_own_text_and_html_leave_the_series_out():
    # (a printed table must not depend on when the measured update's program finished compiling)
    model, opt, viewer = trained_viewer()
    snap = viewer.last_snapshot
    assert snap.series.names
    text, page = text_table(snap), snap._repr_html_()
    assert "‖" not in text and "‖" not in page and "nnx-lab-series" not in page


def test_a_snapshot_without_series_renders_as_before():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    page = nnx_lab.snapshot(model)._repr_html_()
    assert "‖" not in page and "nnx-lab-series" not in page
