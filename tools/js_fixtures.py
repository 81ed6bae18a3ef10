"""Write the JavaScript tests' fixtures from nnx_lab's Python: real payloads of real flax models.

    python tools/js_fixtures.py [OUT_DIR]     # default js/test/generated (git-ignored)

Every payload is what a widget's synced trait holds (``StateViewer.snapshot``,
``SplitReportView.report``, ``ViewPanel.payload``, ``CapturePanel.controls/status/report``,
``CaptureReportView.report``), so a change to a Python payload reaches the front end's tests
(``tests/test_packaging.py`` runs this script, then ``node --test``; ``NNX_LAB_FIXTURES`` tells
the JS tests where the files are). ``format.json`` pins the browser's number, byte, shape and
path formatting to ``nnx_lab.core.render`` and ``core.graph``: inputs and Python's output.

A payload needing a newer flax than the one installed (view panels: ``nnx.view``; capture:
``nnx.capture``) is not written; ``manifest.json`` names it with the reason, and the JS tests
that use it are skipped with that reason.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# --- format.json: inputs and the strings Python writes for them --------------------------------

NUMBERS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.264,
    1.665,
    -0.26401,
    1.0001,
    123.456,
    1234.5,
    -1234.5,
    2.5,
    0.5,
    9999.4,
    9999.5,
    9999.9,
    12345.0,
    99999.5,
    123456.0,
    1e5,
    -2.5e10,
    0.001,
    0.00099996,
    0.0012346,
    0.00012346,
    -3.5e-5,
    1e-7,
    1e-30,
    -1e-30,
    1e30,
    -1e30,
    1.7976931348623157e308,
    5e-324,
    2.2250738585072014e-308,
    1 / 3,
    2 / 3,
    -2 / 3,
    0.1 + 0.2,
    1.2345,
    1.00005,
    0.99995,
    100.05,
    3.14159265,
    6.02214076e23,
    1.602e-19,
    65504.0,
    3.4028234663852886e38,
    1.1754943508222875e-38,
    float("nan"),
    float("inf"),
    float("-inf"),
    7,
    12345678,
    -42,
]
BYTES = [
    0,
    1,
    84,
    1023,
    1024,
    1025,
    1536,
    1126,
    1177,
    1280,
    10239,
    10240,
    1048063,
    1048064,
    1048575,
    1048576,
    1572864,
    12.3 * 2**20,
    302_700_000,
    512 * 2**20,
    2**30 - 1,
    2**30,
    5 * 2**40,
    2**50,
    3 * 2**50,
    2**60,
    2**63,
    -2048,
]
SHAPES = [[], [3], [2, 3], [512, 8, 64], [1, 1, 1, 1], [0], [65536, 4096]]
PATHS = [
    ["blocks", 0, "attn", "query", "kernel"],
    ["d", "<script>"],
    ["d", "<script>", "class"],
    [0, "w"],
    ["a b"],
    ["layers", 1, "rngs", "count"],
    ["it's"],
    ['say "hi"'],
    ["both ' and \""],
    ["back\\slash"],
    ["new\nline"],
    ["tab\t"],
    ["\x01ctl"],
    ["del\x7f"],
    ["nbsp\xa0"],
    ["café"],
    ["π", "θ"],
    ["_private"],
    ["match"],
    ["case"],
    ["type"],
    ["_"],
    ["None"],
    ["True"],
    ["lambda"],
    ["1abc"],
    ["a-b"],
    [""],
    ["日本語"],
    ["x²"],
    ["Ⅻ"],
    [-1],
    [12, 3],
    ["\u2028sep"],
    ["zero\u200bwidth"],
    ["emoji\U0001f600"],
    ["\U0001d400"],
    ["soft\xad"],
    ["\ue000private"],
]


def _number(x: float) -> str:
    """A float as text both sides parse to the same double (JSON has no NaN/Infinity)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(float(x))


def format_cases() -> dict:
    from nnx_lab.core import render
    from nnx_lab.core.graph import path_text

    return {
        "numbers": [[_number(x), render.format_number(x)] for x in NUMBERS],
        "bytes": [[_number(n), render.format_bytes(n)] for n in BYTES],
        "shapes": [[s, render.format_shape(tuple(s))] for s in SHAPES],
        "paths": [[p, path_text(tuple(p))] for p in PATHS],
    }


# --- payloads of real models ------------------------------------------------------------------


def viewer_payloads() -> dict:
    from flax import nnx

    from nnx_lab.widgets.viewer import StateViewer

    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
    viewer = StateViewer(model)
    out = {}
    try:
        out["viewer_sequential"] = {
            "snapshot": viewer.snapshot,
            "status": viewer.status,
            "sparkline_stat": viewer.sparkline_stat,
            "static": static_rows(viewer.last_snapshot),
        }
    finally:
        viewer.close()
    stacked = _stacked_model()
    viewer = StateViewer(stacked, layers={"blocks": 0})
    try:
        out["viewer_layers"] = {"snapshot": viewer.snapshot, "static": static_rows(viewer.last_snapshot)}
    finally:
        viewer.close()
    return {**out, "viewer_series": series_payload(), **alert_payloads()}


def series_payload() -> dict:
    """A viewer given an optimizer (mu, nu, its step count; its hyperparameters injected as state:
    leaves matched to no Variable) and one step's gradients: the trait
    as it is sent with series (``series`` beside ``stats``), and the "stats" message with its
    second buffer as a list of floats."""
    import jax.numpy as jnp
    import optax
    from flax import nnx

    from nnx_lab.widgets.viewer import StateViewer

    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Linear(3, 1, rngs=nnx.Rngs(1)))
    opt = nnx.Optimizer(model, optax.inject_hyperparams(optax.adam)(learning_rate=1e-2), wrt=nnx.Param)
    grads = nnx.grad(lambda m: (m(jnp.ones((4, 2))) ** 2).mean())(model)
    opt.update(model, grads)
    viewer = StateViewer(model, optimizer=opt)
    sent = []
    viewer.send = lambda msg, buffers=None: sent.append((msg, buffers))  # noqa: B023 - used in this iteration
    try:
        # The engine's injectable clock, moved on so far that the tick refreshes
        later = time.monotonic() + 1e6
        viewer.watcher.engine.clock = lambda: later
        viewer.tick(grads=grads)
        viewer.last_snapshot
        viewer._sent_rows = viewer._sent_refresh = None  # the trait again, now with the gradients
        viewer._publish(viewer.watcher)
        viewer.send_stats()
        msg, buffers = sent[-1]
        import numpy as np

        values = [None if v != v else v for v in np.frombuffer(buffers[1], np.float32).tolist()]
        return {
            "snapshot": viewer.snapshot,
            "status": viewer.status,
            "sparkline_stat": viewer.sparkline_stat,
            "stats_message": msg,
            "series_values": values,
        }
    finally:
        viewer.close()


def _stacked_model():
    """blocks: 3 Linear(2, 2) layers made by nnx.vmap (kernel (3, 2, 2), bias (3, 2)), then head: Linear(2, 1)."""
    import jax
    from flax import nnx

    class Stacked(nnx.Module):
        def __init__(self):
            make = nnx.vmap(lambda key: nnx.Linear(2, 2, rngs=nnx.Rngs(key)), in_axes=0, out_axes=0)
            self.blocks = make(jax.random.split(jax.random.key(0), 3))
            self.head = nnx.Linear(2, 1, rngs=nnx.Rngs(1))

    return Stacked()


def alert_payloads() -> dict:
    """Two viewers whose NaN/Inf banner is set: by a logged scalar (a NaN loss at step 21, an Inf in
    a Variable at the end) and by a Variable (NaN, then clean again); with Python's banner text and,
    for the first, the "scalars" message (numbers as text: JSON has no NaN)."""
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx

    from nnx_lab.core import compat
    from nnx_lab.widgets.viewer import StateViewer

    out = {}
    for case in ("scalar", "variable"):
        model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
        viewer = StateViewer(model)
        sent: list = []
        viewer.send = lambda msg, buffers=None: sent.append((msg, buffers))  # noqa: B023 - used in this iteration
        try:
            bias = model.layers[0].bias
            for step in viewer.track(range(40)):
                if case == "scalar":
                    viewer.log(loss=jnp.float32(np.nan if step == 20 else 1.0 / (step + 1)), lr=1e-3)
                elif step == 10:
                    compat.set_value(bias, jnp.array([0.0, np.nan, np.nan]))
                    viewer.refresh()  # seen at a refresh after 10 ticks
                elif step == 30:
                    compat.set_value(bias, jnp.zeros(3))
            if case == "scalar":
                compat.set_value(bias, jnp.array([np.inf, 0.0, 0.0]))
            viewer.refresh()
            viewer.watcher.wait()
            payload = {"snapshot": viewer.snapshot, "alert": viewer.alert, "text": viewer.watcher.alert.text()}
            if case == "scalar":
                viewer.send_scalars()
                msg, (steps, values) = sent[-1]
                payload["scalars"] = {
                    "msg": msg,
                    "steps": np.frombuffer(steps, np.float64).tolist(),
                    "values": [_number(v) for v in np.frombuffer(values, np.float64)],
                    "latest": {name: _number(viewer.watcher.scalars.latest(name)[1]) for name in msg["names"]},
                }
            out[f"viewer_alert_{case}"] = payload
        finally:
            viewer.close()
    return out


def static_rows(snap: Any) -> dict:
    """What the saved notebook's static table writes for each row (``render``), by path text:
    the live table must show the same text."""
    from nnx_lab.core import render
    from nnx_lab.core.graph import path_text

    out = {}
    for row in snap.rows:
        cells = {
            "type": row.type,
            "shape": render.format_shape(row.shape),
            "dtype": row.dtype or "",
            "bytes": render.format_bytes(row.nbytes),
        }
        cells.update({name: render.format_stat((row.stats or {}).get(name)) for name in render.STAT_COLUMNS})
        out[row.path_text] = cells
    return {"rows": out, "nodes": [path_text(p) for p in snap.nodes], "summary": render.summary_line(snap)}


def split_payloads() -> dict:
    from flax import nnx

    from nnx_lab.core.split import split_report
    from nnx_lab.widgets.split import SplitReportView

    model = nnx.Sequential(
        nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)), nnx.Dropout(0.1, rngs=nnx.Rngs(0))
    )
    out = {}
    for name, filters in (
        ("split_shadowing", (nnx.Param, nnx.Variable, nnx.PathContains("nothing"))),
        ("split_partial", (nnx.Param, nnx.BatchStat)),
    ):
        view = SplitReportView(split_report(model, *filters))
        out[name] = view.report
        view.close()
    return out


def _views_model():
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List(
                [
                    nnx.Linear(4, 4, rngs=rngs),
                    nnx.Dropout(0.1, rngs=rngs),
                    nnx.Linear(4, 4, rngs=rngs),
                    nnx.BatchNorm(4, rngs=rngs),
                    nnx.Dropout(0.2, rngs=rngs),
                ]
            )
            self.attn = nnx.MultiHeadAttention(2, 4, decode=False, rngs=rngs)

    return Net(nnx.Rngs(0))


def views_payloads() -> dict:
    from flax import nnx

    from nnx_lab.widgets.views import ViewPanel

    model = _views_model()
    model.train()
    model.layers[3].eval()  # one BatchNorm in eval mode: the model is mixed
    out = {}

    def payload(variant: str, obj: Any, target: str) -> dict:
        panel = ViewPanel(obj, variant=variant, target=target, namespace={})
        try:
            return panel.payload
        finally:
            panel.close()

    out["views_mixed"] = payload("views", model, "model")
    model.eval()
    out["views_eval"] = payload("views", model, "model")
    out["views_modes"] = payload("modes", model, "model")
    out["views_empty"] = payload("views", nnx.Linear(2, 2, rngs=nnx.Rngs(0)), "lin")
    return out


def capture_payloads() -> dict:
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from nnx_lab.core.capture import Capture
    from nnx_lab.widgets.capture import CapturePanel
    from nnx_lab.widgets.capture_report import CaptureReportView

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 4, rngs=rngs)

        def __call__(self, x):
            h = self.linear(x)
            self.sow(nnx.Intermediate, "act", h)
            h = self.perturb("pert", h)
            return jax.nn.relu(h)

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.b0 = Block(rngs)
            self.head = nnx.Linear(4, 2, rngs=rngs)

        def __call__(self, x):
            h = self.b0(x)
            self.sow(nnx.Intermediate, "<img src=x onerror=alert(1)>", h)
            return self.head(h)

    model = Net(nnx.Rngs(0))
    x = jnp.arange(6.0).reshape(2, 3) / 6
    panel = CapturePanel(model, namespace={})
    out = {}
    try:
        panel(x)
        out["capture_call"] = {
            "controls": panel.controls,
            "status": panel.status,
            "report": panel.report,
            "text": panel.last_report.to_text(),
        }
        panel.grads(lambda m, x: m(x).sum(), x)
        out["capture_grads"] = {
            "controls": panel.controls,
            "status": panel.status,
            "report": panel.report,
            "text": panel.last_report.to_text(),
        }
        panel.grads(lambda m, x: jnp.log(m(x).sum() * 0), x)  # log(0): a loss of -inf
        out["capture_grads_inf"] = {"status": panel.status}
        panel.grads(lambda m, x: m(x).sum() * jnp.nan, x)  # a NaN loss
        out["capture_grads_nan"] = {"status": panel.status}
    finally:
        panel.close()
    with Capture(model) as cap:
        model(x)
    view = CaptureReportView(cap.report(), target="Net", elapsed=0.0123)
    out["capture_report_view"] = {
        "variant": view.variant,
        "controls": view.controls,
        "status": view.status,
        "report": view.report,
    }
    view.close()
    return out


def memory_payloads() -> dict:
    import jax.numpy as jnp
    import optax
    from flax import nnx

    from nnx_lab.core.memory import memory
    from nnx_lab.widgets.memory import MemoryView

    model = nnx.Linear(64, 64, rngs=nnx.Rngs(0))
    ns = {
        "model": model,
        "optimizer": nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param),
        "grads_old": {"w": jnp.ones((256, 256))},
        "Out": {3: model},
        "<img src=x onerror=alert(1)>": jnp.zeros((8,)),
    }
    ns["alias"] = ns["grads_old"]
    view = MemoryView(memory(namespace=ns))
    try:
        return {"memory_ledger": view.ledger}
    finally:
        view.close()
        ns.clear()


GROUPS: dict[str, tuple[Callable[[], dict], str | None]] = {
    "viewer": (viewer_payloads, None),
    "split": (split_payloads, None),
    "views": (views_payloads, "nnx.view"),
    "capture": (capture_payloads, "nnx.capture"),
    "memory": (memory_payloads, None),
}
NAMES = {
    "viewer": ["viewer_sequential", "viewer_series", "viewer_layers", "viewer_alert_scalar", "viewer_alert_variable"],
    "split": ["split_shadowing", "split_partial"],
    "views": ["views_mixed", "views_eval", "views_modes", "views_empty"],
    "capture": ["capture_call", "capture_grads", "capture_grads_inf", "capture_grads_nan", "capture_report_view"],
    "memory": ["memory_ledger"],
}


def write(out: Path) -> dict:
    from nnx_lab.core import compat

    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, str | None] = {"format": None}
    (out / "format.json").write_text(json.dumps(format_cases(), ensure_ascii=False, indent=1), encoding="utf-8")
    for group, (make, feature) in GROUPS.items():
        try:
            if feature is not None:
                compat.require(feature, f"the {group} fixtures")
        except compat.NeedsNewerFlax as e:
            manifest.update({name: str(e).splitlines()[0] for name in NAMES[group]})
            continue
        for name, payload in make().items():
            (out / f"{name}.json").write_text(
                json.dumps(payload, allow_nan=False, ensure_ascii=False, indent=1), encoding="utf-8"
            )
            manifest[name] = None
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "js" / "test" / "generated"
    manifest = write(out)
    skipped = {k: v for k, v in manifest.items() if v}
    print(
        f"wrote {len(manifest) - len(skipped)} fixtures to {out}"
        + "".join(f"\n  skipped {k}: {v}" for k, v in skipped.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
