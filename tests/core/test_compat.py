"""Features a too-old flax lacks answer with one line: feature, installed flax, needed flax, the upgrade."""
from __future__ import annotations

import pytest
from flax import nnx
from IPython.utils.capture import capture_output

from nnx_lab.core import compat


@pytest.mark.parametrize("backend, line", [
    ("gpu", 'pip install -U "jax[cuda12]" flax'),
    ("tpu", 'pip install -U "jax[tpu]" flax'),
    ("cpu", "pip install -U flax"),
])
def test_the_message_names_feature_versions_and_this_backends_install_line(monkeypatch, backend, line):
    monkeypatch.setattr(compat, "FLAX_VERSION", "0.11.2")
    e = compat.NeedsNewerFlax("%nnx_view", "nnx.view", backend=backend)
    assert str(e) == (f"%nnx_view needs flax>=0.12.4 (nnx.view); installed flax 0.11.2. "
                      f"Upgrade with: {line} (then restart the runtime)")
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


@pytest.mark.parametrize("cell", [
    "%%nnx_capture model\nmodel(jnp.ones((1, 2)))",
    "%nnx_view model",
    "import nnx_lab\nnnx_lab.view_panel(model)",
    "import nnx_lab\nnnx_lab.capture_panel(model)",
])
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
