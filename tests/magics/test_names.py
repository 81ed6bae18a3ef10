"""Every name nnx_lab binds in the user namespace refuses names whose rebinding breaks the shell."""

import builtins

import pytest
from flax import nnx
from IPython.core.error import UsageError

import nnx_lab

# (name, words of the one-line reason)
BAD = [
    ("__builtins__", "names starting with __"),
    ("get_ipython", "IPython's own names"),
    ("In", "IPython's own names"),
    ("Out", "IPython's own names"),
    ("exit", "IPython's own names"),
    ("_", "IPython's own names"),
    ("__", "names starting with __"),
    ("_i3", "IPython's own names"),
    ("_oh", "IPython's own names"),
    ("_7", "IPython's own names"),
    ("print", "builtin"),
    ("len", "builtin"),
    ("class", "keyword"),
    ("match", "keyword"),
]


@pytest.fixture
def ip(ip):
    ip.user_ns.update(
        nnx=nnx, model=nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    )
    yield ip
    ip.user_ns.pop("model", None)


def shell_still_works(ip):
    assert ip.user_ns["__builtins__"] in (builtins, builtins.__dict__)
    assert ip.user_ns["get_ipython"]() is ip
    result = ip.run_cell("len([1, 2])")
    assert result.success and result.result == 2


MAGICS = [
    ("nnx_snapshot", "model --no-stats --as {}"),
    ("nnx_watch", "model --no-stats --as {}"),
    ("nnx_view", "model --as {}"),
    ("nnx_split", "model nnx.Param ... --as g,{},r"),
]
NEEDS_FLAX = {"nnx_view": "nnx.view"}  # what an older flax (Colab's) answers with one line instead


@pytest.mark.parametrize(
    "magic, line",
    [
        pytest.param(m, line, marks=[pytest.mark.needs_flax(NEEDS_FLAX[m])] if m in NEEDS_FLAX else [])
        for m, line in MAGICS
    ],
)
@pytest.mark.parametrize("name, reason", BAD)
def test_line_magics_refuse_names_that_break_the_shell(ip, magic, line, name, reason):
    with pytest.raises(UsageError, match=reason) as e:
        ip.run_line_magic(magic, line.format(name))
    assert "\n" not in str(e.value) and repr(name) in str(e.value)
    shell_still_works(ip)


@pytest.mark.needs_flax("nnx.capture")
@pytest.mark.parametrize("name, reason", BAD)
def test_cell_magics_refuse_them_too(ip, name, reason):
    before = {k: v for k, v in ip.user_ns.items() if k in ("In", "Out", "_", "__", "exit")}
    with pytest.raises(UsageError, match=reason):
        ip.run_cell_magic("nnx_split", f"model nnx.Param ... --merge-into {name}", "pass")
    with pytest.raises(UsageError, match=reason):
        ip.run_cell_magic("nnx_capture", f"model --as {name}", "pass")
    assert {k: ip.user_ns[k] for k in before} == before
    shell_still_works(ip)


@pytest.mark.needs_flax("nnx.view")
def test_the_targets_own_name_is_refused(ip):
    for magic, line in MAGICS:
        with pytest.raises(UsageError, match="TARGET itself"):
            ip.run_line_magic(magic, line.format("model").replace("g,model,r", "model,p,r"))
    assert isinstance(ip.user_ns["model"], nnx.Sequential)


@pytest.mark.needs_flax("nnx.view")
@pytest.mark.parametrize("name, reason", BAD)
def test_create_view_refuses_them(name, reason):
    model = nnx.Sequential(nnx.Dropout(0.5, rngs=nnx.Rngs(0)))
    namespace = {"__builtins__": builtins, "model": model}
    panel = nnx_lab.ViewPanel(model, namespace=namespace)
    acks = []
    panel.send = lambda content, buffers=None: acks.append(content)
    panel._on_message(
        panel, {"type": "view", "id": 1, "only": None, "values": {"deterministic": True}, "name": name}, []
    )
    ack = acks[-1]
    assert ack["state"] == "error" and reason in ack["text"] and "\n" not in ack["text"]
    assert namespace == {"__builtins__": builtins, "model": model}


def test_default_split_names_never_shadow_a_builtin(ip):
    ip.run_line_magic("nnx_split", "model nnx.PathContains('list') ...")
    assert "list" not in ip.user_ns and "filter1" in ip.user_ns
    for n in ("graphdef", "filter1", "rest"):
        ip.user_ns.pop(n, None)
