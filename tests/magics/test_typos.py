"""Issue 35 §4: a typo in any magic's line (an unknown option, a misspelled choice, name, attribute,
Variable type, loss function or method) is one UsageError line with the closest
spelling ("did you mean --grads?"), and nothing ran: the model is unchanged."""

import jax.numpy as jnp
import pytest
from flax import nnx
from IPython.core.error import UsageError
from unchanged import assert_unchanged, frozen


class Encoder(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        return self.drop(h)

    def encode(self, x):
        return self.linear(x)


def loss_fn(model, x):
    return model(x).sum()


@pytest.fixture
def ip(ip):
    ip.user_ns.update(nnx=nnx, jnp=jnp, x=jnp.ones((1, 2)), model=Encoder(nnx.Rngs(0)), loss_fn=loss_fn)
    return ip


CASES = [
    # unknown options: the closest option of that magic
    ("nnx_snapshot", "model --maxrows 5", "unrecognized arguments: --maxrows 5; did you mean --max-rows?"),
    ("nnx_watch", "model --optimzer opt", "did you mean --optimizer?"),
    ("nnx_watch", "model --backgrund", "did you mean --background?"),
    ("nnx_split", "model nnx.Param ... --merge_into half", "did you mean --merge-into?"),
    ("nnx_mode", "model train --evel", "unrecognized arguments: --evel"),  # nnx_mode has no option: none to list
    ("nnx_view", "model --onyl nnx.Dropout", "did you mean --only?"),
    ("nnx_summary", "model x --grads", "did you mean --grad?"),
    ("nnx_summary", "model x --dpeth 1", "did you mean --depth?"),
    ("nnx_compare", "model model --tl 1e-6", "did you mean --tol?"),
    # misspelled values
    ("nnx_mode", "model evel", "mode 'evel' is not one of train, eval; did you mean eval?"),
    ("nnx_watch", "modle", "TARGET 'modle': name 'modle' is not defined; did you mean model?"),
    ("nnx_snapshot", "model.linaer", "did you mean linear?"),
    ("nnx_compare", "model modl", "did you mean model?"),
    ("nnx_summary", "model x --method encod", "did you mean encode?"),
    ("nnx_split", "model nnx.Parm ...", "did you mean Param?"),
    ("nnx_snapshot", "model --layers linaer=0", "no Variable under 'linaer'; did you mean linear?"),
    ("nnx_watch", "model --layers lnear=0", "no Variable under 'lnear'; did you mean linear?"),
    ("nnx_compare", "model model --layers linar=0", "no Variable under 'linar' in a; did you mean linear?"),
]


@pytest.mark.parametrize("magic, line, said", CASES, ids=[f"{m} {line}" for m, line, _ in CASES])
def test_a_typo_is_one_line_with_the_closest_spelling(ip, magic, line, said):
    model = ip.user_ns["model"]
    before = frozen(model)
    with pytest.raises(UsageError) as e:
        ip.run_line_magic(magic, line)
    message = str(e.value)
    assert "\n" not in message and len(message) < 400
    assert said in message, message
    assert_unchanged(model, before)  # nothing ran (a mode switch included: it is in the graphdef)


def test_an_option_with_nothing_close_lists_the_magics_own(ip):
    """The issue's line: --gard is close to no option of %nnx_watch (--grads is %%nnx_capture's)."""
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("nnx_watch", "model --gard")
    assert str(e.value) == (
        "unrecognized arguments: --gard; %nnx_watch takes --rate, --background, --no-stats, --as, --pin, "
        "--layers, --optimizer"
    )


def test_run_all_shows_the_one_line(ip, capsys):
    result = ip.run_cell("%nnx_summary model x --grads")
    assert isinstance(result.error_in_exec, UsageError)
    shown = capsys.readouterr()
    lines = [ln for ln in (shown.out + shown.err).splitlines() if ln.strip()]
    assert lines == ["UsageError: unrecognized arguments: --grads; did you mean --grad?"]


CAPTURE_CASES = [
    ("model --gard loss_fn", "did you mean --grads?"),
    ("model --types Intermedate", "did you mean Intermediate?"),
    ("model --grads los_fn", "--grads los_fn: no such name in the namespace; did you mean loss_fn?"),
]


@pytest.mark.needs_flax("nnx.capture")
@pytest.mark.parametrize("line, said", CAPTURE_CASES, ids=[line for line, _ in CAPTURE_CASES])
def test_capture_typos_are_one_line_and_run_nothing(ip, line, said):
    model = ip.user_ns["model"]
    before = frozen(model)
    ip.user_ns.pop("y", None)
    with pytest.raises(UsageError) as e:
        ip.run_cell_magic("nnx_capture", line, "y = model(x)")
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert "y" not in ip.user_ns and "captured" not in ip.user_ns  # the body never ran
    assert_unchanged(model, before)
