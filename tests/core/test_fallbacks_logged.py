"""A fallback that costs speed on every refresh is said once at INFO (then at DEBUG): a bug in a hot
path shows in the log, not only as slowness, and the refresh still works."""

from __future__ import annotations

import logging

from flax import nnx

import nnx_lab
from nnx_lab.core.snapshot import _structure


def test_a_flatten_that_fails_at_every_refresh_is_logged_once_at_info(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the hot path")

    monkeypatch.setattr(_structure, "flatten", broken)  # what StructureCache calls on every refresh
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    caplog.set_level(logging.DEBUG, logger="nnx_lab")
    viewer = nnx_lab.watch(model, display=False)
    try:
        for _ in range(3):
            viewer.refresh()
        assert viewer.status["state"] == "live"
        assert sorted(r.path_text for r in viewer.watcher.snapshot.rows) == ["bias", "kernel"]
    finally:
        viewer.close()
    said = [r for r in caplog.records if "not flattened" in r.getMessage()]
    infos = [r for r in said if r.levelno == logging.INFO]
    assert len(infos) == 1, [(r.levelname, r.getMessage()) for r in said]
    assert "Linear not flattened: flax walks it at every refresh (slower; said once)" in infos[0].getMessage()
    assert "RuntimeError: a bug in the hot path" in infos[0].getMessage()
    assert len(said) >= 3 and all(r.levelno == logging.DEBUG for r in said if r is not infos[0])
