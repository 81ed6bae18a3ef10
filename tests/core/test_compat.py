"""Features a too-old flax lacks answer with one line: feature, installed flax, needed flax, the upgrade."""

from __future__ import annotations

import pytest
from flax import nnx
from IPython.utils.capture import capture_output

from nnx_lab.core import compat


@pytest.mark.parametrize(
    "backend, line",
    [
        ("gpu", 'pip install -U "jax[cuda12]" flax'),
        ("tpu", 'pip install -U "jax[tpu]" flax'),
        ("cpu", "pip install -U flax"),
    ],
)
def test_the_message_names_feature_versions_and_this_backends_install_line(monkeypatch, backend, line):
    monkeypatch.setattr(compat, "FLAX_VERSION", "0.11.2")
    e = compat.NeedsNewerFlax("%nnx_view", "nnx.view", backend=backend)
    assert str(e) == (
        f"%nnx_view needs flax>=0.12.4 (nnx.view); installed flax 0.11.2. "
        f"Upgrade with: {line} (then restart the runtime)"
    )
    assert "\n" not in str(e)


def test_feature_versions_follow_flax_releases(monkeypatch):
    monkeypatch.setattr(compat, "FLAX_VERSION", "0.12.5")
    assert compat.has("nnx.view") and not compat.has("nnx.capture")
    monkeypatch.setattr(compat, "FLAX_VERSION", "0.12.6")
    assert compat.has("nnx.capture")


@pytest.fixture
def old_flax(ip, monkeypatch):
    monkeypatch.setattr(compat, "FLAX_VERSION", "0.11.2")
    ip.user_ns["model"] = model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5))
    return model


@pytest.mark.parametrize(
    "cell",
    [
        "%%nnx_capture model\nmodel(jnp.ones((1, 2)))",
        "%nnx_view model",
        "import nnx_lab\nnnx_lab.view_panel(model)",
        "import nnx_lab\nnnx_lab.capture_panel(model)",
    ],
)
def test_a_feature_needing_newer_flax_is_one_line_and_changes_nothing(ip, old_flax, cell):
    before = dict(vars(old_flax.layers[0]))
    ip.user_ns["jnp"] = __import__("jax.numpy").numpy
    with capture_output() as out:
        ip.run_cell(cell)
    shown = (out.stdout + out.stderr).strip()
    assert shown.startswith("NeedsNewerFlax: ") and "Traceback" not in shown and len(shown.splitlines()) == 1
    assert "installed flax 0.11.2" in shown and "flax>=0.12" in shown
    assert "pip install -U" in shown
    assert dict(vars(old_flax.layers[0])) == before and not hasattr(old_flax.layers[0], "__captures__")


def test_nnx_mode_switches_and_reports_on_every_flax(ip):
    # Colab's flax 0.11.2 has no set_view: train/eval are read from the attributes model.train() sets.
    ip.user_ns["model"] = model = nnx.Sequential(
        nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.BatchNorm(2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5)
    )
    with capture_output() as out:
        ip.run_line_magic("nnx_mode", "model eval")
    assert model.layers[1].use_running_average is True and model.layers[2].deterministic is True
    assert out.stdout.startswith("Sequential: eval (2 of 2 modules")
    assert "layers[2] (Dropout): eval" in out.stdout
    with capture_output() as out:
        ip.run_line_magic("nnx_mode", "model train")
    assert model.layers[1].use_running_average is False and model.layers[2].deterministic is False
    assert out.stdout.startswith("Sequential: train")


def test_tied_weights_are_one_row_on_every_flax():
    import nnx_lab

    class Tied(nnx.Module):
        def __init__(self, rngs):
            self.out = nnx.Linear(2, 2, rngs=rngs)
            self.w = self.out.kernel  # flax 0.11's iter_graph visits it twice

    snap = nnx_lab.snapshot(Tied(nnx.Rngs(0)))
    assert [r.path for r in snap.rows] == [("out", "bias"), ("out", "kernel")]
    assert snap["out.kernel"].aliases == (("w",),)
