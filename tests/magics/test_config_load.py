"""A bad NnxLabMagics value in an IPython config, or one ``%config`` refused (IPython keeps it in
``shell.config`` all the same), never stops the magics loading: it is said once and the default
stays (README: "refused, the default stays")."""

import logging

import pytest
from IPython.core.interactiveshell import InteractiveShell

from nnx_lab.magics import NnxLabMagics


def magics(shell):
    (instance,) = [c for c in shell.configurables if isinstance(c, NnxLabMagics)]
    return instance


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    yield shell
    for name in ("max_rows", "rate", "bins"):
        shell.config.NnxLabMagics.pop(name, None)
    shell.run_line_magic("reload_ext", "nnx_lab")
    shell.run_line_magic("unload_ext", "nnx_lab")


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("max_rows", -5, "NnxLabMagics.max_rows must be an integer in [1, 1000000], got -5"),
        ("rate", "fast", "NnxLabMagics.rate must be a number in (0, 100], got 'fast'"),
        ("rate", True, "NnxLabMagics.rate must be a number in (0, 100], got True"),
        ("bins", 2.5, "NnxLabMagics.bins must be an integer in [1, 1024], got 2.5"),
    ],
)
def test_a_bad_configured_value_warns_once_and_the_magics_load_with_the_default(shell, caplog, name, value, message):
    shell.config.NnxLabMagics[name] = value
    shell.config.NnxLabMagics["bins" if name != "bins" else "max_rows"] = 7  # a good one beside it is kept
    with caplog.at_level(logging.WARNING, logger="nnx_lab"):
        shell.run_line_magic("load_ext", "nnx_lab")
        shell.run_line_magic("reload_ext", "nnx_lab")
    assert "nnx_snapshot" in shell.magics_manager.magics["line"]
    assert getattr(magics(shell), name) == getattr(NnxLabMagics, name).default_value
    assert getattr(magics(shell), "bins" if name != "bins" else "max_rows") == 7
    said = [r.getMessage() for r in caplog.records if message in r.getMessage()]
    assert len(said) == 1  # at load, not again at %reload_ext


def test_a_value_config_refused_does_not_break_the_next_reload(shell, caplog):
    shell.run_line_magic("load_ext", "nnx_lab")
    with caplog.at_level(logging.WARNING):
        shell.run_line_magic("config", "NnxLabMagics.max_rows = -7")
        assert magics(shell).max_rows == 200  # refused by %config
        shell.run_line_magic("reload_ext", "nnx_lab")  # shell.config holds -7: a traceback before
        shell.run_line_magic("reload_ext", "nnx_lab")
    assert "nnx_snapshot" in shell.magics_manager.magics["line"] and magics(shell).max_rows == 200
    text = caplog.text
    assert "got -7: refused, the default 200 stays" in text
    assert text.count("got -7: refused, the default 200 stays") == 1  # said once, not at every reload


def test_config_rate_true_is_refused_not_taken_as_one(shell, capsys, caplog):
    shell.run_line_magic("load_ext", "nnx_lab")
    shell.run_line_magic("config", "NnxLabMagics.rate = True")
    assert magics(shell).rate == 2.0
    assert "NnxLabMagics.rate must be a number in (0, 100], got True" in capsys.readouterr().err + caplog.text
