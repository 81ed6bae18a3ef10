"""Bad numbers, mismatched labels, reprs that raise and multi-line errors: one line each, nothing changed."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen

import nnx_lab
from nnx_lab.core import compat
from nnx_lab.core.split import SplitError

BAD_RATES = [float("nan"), float("inf"), -1.0, 0, 1e9, True, "2", np.True_, np.float32("nan"), np.ones(2)]


@pytest.fixture
def model():
    return nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))


@pytest.fixture
def ip(ip, model):
    ip.user_ns.update(nnx=nnx, model=model)
    yield ip
    ip.user_ns.pop("model", None)


@pytest.mark.parametrize("rate", BAD_RATES)
def test_watch_refuses_rates_that_stop_the_throttle(model, rate):
    with pytest.raises(ValueError, match=r"max_rate .* must be a number in \(0, 100\]"):
        nnx_lab.watch(model, max_rate=rate, display=False)
    from nnx_lab.core.watcher import Watcher

    with pytest.raises(ValueError, match=r"budget .* must be a number in \(0, 1\]"):
        Watcher(model, budget=rate)


@pytest.mark.parametrize("number", [np.float32(0.5), np.float64(0.5), jnp.asarray(0.5)], ids=["f32", "f64", "0-d jax"])
def test_numeric_options_take_numpy_and_0d_array_scalars(model, number):
    from nnx_lab.core.stats import histograms_dispatch, histograms_fetch
    from nnx_lab.core.watcher import Watcher

    before = frozen(model)
    nnx_lab.watch(model, max_rate=number * 4, display=False).close()
    watcher = Watcher(model, max_rate=number * 4, budget=number)
    assert (watcher.max_rate, watcher.budget) == (2.0, 0.5) and type(watcher.max_rate) is float
    if compat.has("nnx.capture"):
        nnx_lab.capture_panel(model, max_rate=number, budget=number / 10, display=False).close()
    integer = np.int64(7) if isinstance(number, np.generic) else jnp.asarray(7)
    assert len(histograms_fetch(histograms_dispatch([jnp.arange(10.0)], bins=integer))[0]) == 2 + 7
    assert nnx_lab.summary(model, jnp.ones((1, 2)), depth=integer // 7, memory=False).rows
    assert_unchanged(model, before)


@pytest.mark.parametrize("rate", ["nan", "inf", "-1", "0", "1e9"])
def test_nnx_watch_rate_is_checked(ip, rate):
    with pytest.raises(UsageError, match=r"--rate \(refreshes per second\) must be a number in \(0, 100\]"):
        ip.run_line_magic("nnx_watch", f"model --rate {rate}")


@pytest.mark.parametrize("rate", BAD_RATES)
def test_capture_panel_refuses_bad_rates(model, rate):
    if not compat.has("nnx.capture"):
        pytest.skip("needs nnx.capture")
    with pytest.raises(ValueError, match="max_rate"):
        nnx_lab.capture_panel(model, max_rate=rate)


@pytest.mark.parametrize("bins", ["0", "-3", "1025", "20000000"])
def test_nnx_capture_bins_are_bounded(ip, model, bins):
    if not compat.has("nnx.capture"):
        pytest.skip("needs nnx.capture")
    before = frozen(model)
    with pytest.raises(UsageError, match=r"--bins must be an integer in \[1, 1024\]"):
        ip.run_cell_magic("nnx_capture", f"model --bins {bins}", "model(jnp.ones((1, 2)))")
    assert_unchanged(model, before)


def test_histogram_api_bins_are_bounded():
    from nnx_lab.core.stats import histograms_dispatch

    for bins in (0, 10**8, 2.5, math.nan):
        with pytest.raises(ValueError, match=r"bins must be an integer in \[1, 1024\]"):
            histograms_dispatch([jnp.ones(3)], bins=bins)


@pytest.mark.parametrize("rows", ["-1", "0"])
def test_max_rows_must_be_positive(ip, rows):
    with pytest.raises(UsageError, match=r"--max-rows must be an integer in \[1, 1000000\]"):
        ip.run_line_magic("nnx_snapshot", f"model --max-rows {rows}")


@pytest.mark.parametrize("labels", [["a"], ["a", "b", "c"], "ab"])
def test_split_report_labels_must_match_the_filters(model, labels):
    with pytest.raises(SplitError, match=r"labels= gives \d labels for 2 filters"):
        nnx_lab.split_report(model, nnx.Param, ..., labels=labels)


class BadRepr:
    """A filter object whose repr raises: flax accepts any callable."""

    def __call__(self, path, value):
        return True

    def __repr__(self):
        raise RuntimeError("no repr")


def test_a_filter_whose_repr_raises_still_splits(model):
    report = nnx_lab.split_report(model, BadRepr())
    assert report.filters[0].label == "<repr failed: RuntimeError>"
    assert report.filters[0].count == len(list(nnx.to_flat_state(nnx.state(model))))
    assert "<repr failed: RuntimeError>" in report.to_text()


def multi_line_filter(path, value):
    raise ValueError("a\nb\nc")


def test_errors_are_cut_to_their_first_line(ip, model):
    ip.user_ns["multi"] = multi_line_filter
    before = frozen(model)
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("nnx_split", "model multi ...")
    assert str(e.value) == "filter 1 (multi) raised ValueError on layers[0].bias: a"
    ip.user_ns["boom"] = lambda: (_ for _ in ()).throw(ValueError("first\nsecond"))
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("nnx_snapshot", "boom()")
    assert str(e.value) == "TARGET 'boom()' raised ValueError: first"
    assert_unchanged(model, before)


@pytest.mark.parametrize("captured", [3, {"a": jnp.ones(3)}, None])
def test_capture_report_of_something_not_captured_says_what_it_needs(captured):
    with pytest.raises(TypeError, match=r"^capture_report needs the nnx.State a capture collected .*got "):
        nnx_lab.capture_report(captured)


@pytest.mark.parametrize("bad", [3, 2.5, b"kernel"])
def test_split_report_says_what_a_filter_is_not_what_flax_tripped_on(model, bad):
    before = frozen(model)
    with pytest.raises(SplitError) as info:
        nnx_lab.split_report(model, bad)
    assert_unchanged(model, before)
    text = str(info.value)
    assert "\n" not in text and f"is not an NNX filter ({type(bad).__name__}): a filter is a Variable type" in text
    assert "format specifier" not in text
