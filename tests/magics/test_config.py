"""``%config NnxLabMagics.<option> = ...`` changes a magic's default; an option on the line still
wins; a bad value is refused as the option would be, and the default stays."""

import jax.numpy as jnp
import pytest
from flax import nnx

from nnx_lab.magics import NnxLabMagics


def magics(ip):
    (instance,) = [c for c in ip.configurables if isinstance(c, NnxLabMagics)]
    return instance


@pytest.fixture
def model(ip):
    ip.user_ns["model"] = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    yield ip.user_ns["model"]
    ip.user_ns.pop("model", None)


@pytest.fixture
def reset(ip):
    yield
    for name in ("max_rows", "rate", "bins"):  # %config merges into the shell's config too: undo both
        ip.config.NnxLabMagics.pop(name, None)
    ip.run_line_magic("reload_ext", "nnx_lab")


def test_the_defaults_are_the_documented_ones(ip):
    assert (magics(ip).max_rows, magics(ip).rate, magics(ip).bins) == (200, 2.0, 16)
    assert set(NnxLabMagics.class_own_traits(config=True)) == {"max_rows", "rate", "bins"}


def test_config_max_rows_changes_the_default_and_an_option_wins(ip, model, reset, capsys):
    ip.run_line_magic("config", "NnxLabMagics.max_rows = 1")
    assert magics(ip).max_rows == 1
    ip.run_line_magic("nnx_snapshot", "model --no-stats")
    out = capsys.readouterr().out
    assert "bias" in out and "kernel" not in out  # one row of two
    ip.run_line_magic("nnx_snapshot", "model --no-stats --max-rows 2")
    out = capsys.readouterr().out
    assert "bias" in out and "kernel" in out
    ip.run_line_magic("reload_ext", "nnx_lab")  # the setting outlives %reload_ext, as IPython's own do
    assert magics(ip).max_rows == 1


def test_config_rate_is_the_viewers_default(ip, model, reset):
    ip.run_line_magic("config", "NnxLabMagics.rate = 5")
    assert magics(ip).rate == 5.0
    ip.run_line_magic("nnx_watch", "model --no-stats --as viewer")
    assert ip.user_ns["viewer"].watcher.max_rate == 5.0
    ip.run_line_magic("nnx_watch", "model --no-stats --as viewer --rate 0.5")
    assert ip.user_ns["viewer"].watcher.max_rate == 0.5
    ip.user_ns.pop("viewer").close()


@pytest.mark.needs_flax("nnx.capture")
def test_config_bins_is_the_capture_reports_default(ip, reset, monkeypatch):
    import nnx_lab.widgets.capture_report as capture_report  # the panel %%nnx_capture draws

    class Tap(nnx.Module):
        def __init__(self):
            self.linear = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

        def __call__(self, x):
            self.sow(nnx.Intermediate, "h", self.linear(x))
            return x

    ip.user_ns.update(tap=Tap(), jnp=jnp)
    reports = []
    monkeypatch.setattr(capture_report, "CaptureReportView", lambda report, **view: reports.append(report) or report)
    ip.run_line_magic("config", "NnxLabMagics.bins = 3")
    ip.run_cell_magic("nnx_capture", "tap", "tap(jnp.ones((1, 2)))")
    ip.run_cell_magic("nnx_capture", "tap --bins 5", "tap(jnp.ones((1, 2)))")
    assert [report.bins for report in reports] == [3, 5]
    ip.user_ns.pop("tap")


@pytest.mark.parametrize(
    "line, message",
    [
        ("NnxLabMagics.max_rows = 0", "NnxLabMagics.max_rows must be an integer in [1, 1000000], got 0"),
        ("NnxLabMagics.rate = 0", "NnxLabMagics.rate must be a number in (0, 100], got 0"),  # as written
        ("NnxLabMagics.rate = float('nan')", "NnxLabMagics.rate must be a number in (0, 100], got nan"),
        ("NnxLabMagics.bins = 2000", "NnxLabMagics.bins must be an integer in [1, 1024], got 2000"),
        ("NnxLabMagics.max_rows = True", "NnxLabMagics.max_rows must be an integer in [1, 1000000], got True"),
    ],
)
def test_a_bad_value_is_refused_and_the_default_stays(ip, reset, capsys, caplog, line, message):
    before = (magics(ip).max_rows, magics(ip).rate, magics(ip).bins)
    ip.run_line_magic("config", line)
    assert message in capsys.readouterr().err + caplog.text  # %config reports it (IPython 9 logs it)
    assert (magics(ip).max_rows, magics(ip).rate, magics(ip).bins) == before


def test_config_lists_the_options_with_their_help(ip, capsys):
    ip.run_line_magic("config", "NnxLabMagics")
    out = capsys.readouterr().out
    for text in ("NnxLabMagics.max_rows", "NnxLabMagics.rate", "NnxLabMagics.bins", "--max-rows is not given"):
        assert text in out
