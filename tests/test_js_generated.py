"""Python is the one source of what the front end shows: its constants module is generated from
Python and current, and the static table writes the numbers the live widget's payload carries
exactly as the browser writes them (the browser's side of that: js/test/pyformat.test.js)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flax import nnx

import nnx_lab
from nnx_lab.core import render

REPO = Path(__file__).resolve().parents[1]


def test_js_constants_module_is_current():
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "js_constants.py"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": ""},
    )
    assert result.returncode == 0, result.stderr


def test_static_table_writes_the_payload_numbers_as_the_browser_does():
    snap = nnx_lab.snapshot(nnx.Sequential(nnx.Linear(3, 5, rngs=nnx.Rngs(1)), nnx.BatchNorm(5, rngs=nnx.Rngs(1))))
    payload = snap.to_dict()
    checked = 0
    for i, row in enumerate(snap.rows):
        for name in render.STAT_COLUMNS:
            static = render.format_stat(row.stats.get(name))
            assert static == render.format_number(payload["stats"][name][i]), (row.path_text, name)
            checked += 1
    assert checked == 5 * len(snap.rows)
    table = repr(snap)
    assert render.format_stat(snap.rows[1].stats["norm"]) in table


def test_format_rules_on_edge_values():
    assert [render.format_number(x) for x in (1e-30, -1e30, float("nan"), float("inf"), 0.0)] == [
        "1e-30",
        "-1e+30",
        "NaN",
        "inf",
        "0",
    ]
    assert render.format_bytes(302_700_000) == "288.7 MiB" and render.format_bytes(1048575) == "1.0 MiB"
