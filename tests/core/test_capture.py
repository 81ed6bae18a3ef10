"""Capture core: what is captured, what is reported, and that the model and its classes are left as they were."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from flax import nnx
from unchanged import assert_unchanged, frozen

from nnx_lab.core import compat
from nnx_lab.core.capture import (
    Capture,
    CaptureReport,
    GradResult,
    NoPerturbations,
    capture_call,
    capture_report,
    flatten_captured,
    intermediate_grads,
    patched_classes,
    resolve_types,
)
from nnx_lab.core.graph import path_text

if compat.missing("nnx.capture"):  # below, module-level code uses that flax's API
    pytest.skip(compat.missing("nnx.capture"), allow_module_level=True)


class MyInterm(nnx.Intermediate):
    pass


class Block(nnx.Module):
    def __init__(self, din, rngs):
        self.linear = nnx.Linear(din, 4, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        h = self.linear(x)
        self.sow(nnx.Intermediate, "h", h)
        self.sow(MyInterm, "double", 2 * h)
        h = self.perturb("hp", h)
        return self.act(self.drop(h))

    def act(self, h):
        return nnx.relu(h)

    @staticmethod
    def helper(x):  # a staticmethod must keep working while classes are patched
        return x + 1


class Net(nnx.Module):
    def __init__(self, rngs):
        self.blocks = nnx.List([Block(3, rngs), Block(4, rngs)])
        self.head = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = block(x) + block.helper(0.0)
        return self.head(x)


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(4)(x)
        self.sow("intermediates", "hidden", h)
        return Inner()(nn.relu(h))


class Inner(nn.Module):
    @nn.compact
    def __call__(self, x):
        y = nn.Dense(2)(x)
        self.sow("intermediates", "y", y)
        return y


class Bridged(nnx.Module):
    def __init__(self, rngs):
        self.pre = nnx.Linear(3, 3, rngs=rngs)
        self.mlp = nnx.bridge.ToNNX(LinenMLP(), rngs=rngs)

    def __call__(self, x):
        return self.mlp(self.pre(x))


X = jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)
CLASSES = (Net, Block, nnx.Linear, nnx.Dropout, nnx.List, nnx.bridge.ToNNX)


def class_dicts():
    return {cls: dict(vars(cls)) for cls in CLASSES}


def assert_disarmed(model, dicts):
    assert not any("__captures__" in vars(m) for _, m in nnx.iter_modules(model))
    assert class_dicts() == dicts
    assert patched_classes() == {}


def paths(state):
    return sorted(path_text(p) for p, _ in nnx.to_flat_state(state))


@pytest.fixture
def net():
    return Net(nnx.Rngs(0))


# --------------------------------------------------------------------------- types


def test_resolve_types_accepts_classes_names_and_lists():
    assert resolve_types(nnx.Intermediate) == (nnx.Intermediate,)
    assert resolve_types("Intermediate, nnx.Perturbation") == (nnx.Intermediate, nnx.Perturbation)
    assert resolve_types("flax.nnx.Perturbation") == (nnx.Perturbation,)
    assert resolve_types("MyInterm", {"MyInterm": MyInterm}) == (MyInterm,)
    assert resolve_types("lib.MyInterm", {"lib": type("lib", (), {"MyInterm": MyInterm})}) == (MyInterm,)
    assert resolve_types("intermediates") == (nnx.Intermediate,)  # the Linen collection name
    assert resolve_types([nnx.Intermediate, "Intermediate", (MyInterm,)]) == (nnx.Intermediate, MyInterm)
    assert resolve_types(None) == (nnx.Intermediate,)


@pytest.mark.parametrize(
    "spec, error, message",
    [
        ("Linear", TypeError, "'Linear' is a type, not an nnx.Variable type"),
        (nnx.Linear, TypeError, "Linear is not an nnx.Variable type"),
        (42, TypeError, "42 is an int, not an nnx.Variable type"),
        ("np", TypeError, "'np' is a module, not an nnx.Variable type"),
        ("Nope", ValueError, "unknown Variable type 'Nope'"),
        ("Intermediate,,", ValueError, "empty name"),
        ([], ValueError, "no Variable type given"),
    ],
)
def test_resolve_types_rejects_with_one_line(spec, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")) as info:
        resolve_types(spec, {"np": np})
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- capturing


def test_sow_is_captured_per_call_keyed_by_module_path(net):
    with Capture(net) as cap:
        net(X)
        net(X)
    assert paths(cap.captured) == ["blocks[0].h", "blocks[1].h"]
    h = cap.captured["blocks"][0]["h"]
    assert type(h) is nnx.Intermediate and len(h.get_value()) == 2  # one entry per call
    expected = net.blocks[0].linear(X)
    assert np.allclose(h.get_value()[0], expected)
    assert cap.seen_types == (nnx.Intermediate, MyInterm, nnx.Perturbation)


def test_chosen_types_only(net):
    with Capture(net, types=(MyInterm, nnx.Perturbation)) as cap:
        net(X)
    assert paths(cap.captured) == ["blocks[0].double", "blocks[0].hp", "blocks[1].double", "blocks[1].hp"]
    assert {type(v) for _, v in nnx.to_flat_state(cap.captured)} == {MyInterm, nnx.Perturbation}


def test_method_outputs_and_other_instances_untouched(net):
    other = Net(nnx.Rngs(1))  # the same classes, not captured
    dicts = class_dicts()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sow on a module without __captures__ would warn (and add attributes)
        with Capture(net, methods=True) as cap:
            net(X)
            other.head(jnp.ones(4))  # patched nnx.Linear.__call__ on an instance nobody armed
            other.blocks[0].act(X)  # patched Block.act
            assert Block.helper(1.0) == 2.0
    assert paths(cap.captured) == [
        "__call__",
        "blocks[0].__call__",
        "blocks[0].act",
        "blocks[0].drop.__call__",
        "blocks[0].h",
        "blocks[0].linear.__call__",
        "blocks[1].__call__",
        "blocks[1].act",
        "blocks[1].drop.__call__",
        "blocks[1].h",
        "blocks[1].linear.__call__",
        "head.__call__",
    ]
    assert cap.captured["__call__"].get_value()[0].shape == (2, 2)
    assert sorted(k for k in vars(other.blocks[0]) if not k.startswith("_pytree__")) == ["drop", "linear"]
    assert sorted(k for k in vars(other.head) if not k.startswith("_pytree__")) == sorted(
        k for k in vars(net.head) if not k.startswith("_pytree__")
    )
    assert_disarmed(net, dicts)


def test_inherited_method_sows_once():
    class Base(nnx.Module):
        def __call__(self, x):
            return x * 2

    class Child(Base):
        def __call__(self, x):
            return super().__call__(x) + 1

    class Plain(Base):
        pass

    class Holder(nnx.Module):
        def __init__(self):
            self.child, self.plain = Child(), Plain()

        def __call__(self, x):
            return self.child(x) + self.plain(x)

    model = Holder()
    _, captured = capture_call(model, model, jnp.ones(2), methods=True)
    assert len(captured["child"]["__call__"].get_value()) == 1  # super().__call__ did not sow again
    assert np.allclose(captured["child"]["__call__"].get_value()[0], 3.0)
    assert np.allclose(captured["plain"]["__call__"].get_value()[0], 2.0)  # inherited __call__ is recorded


def test_methods_with_a_custom_type():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    _, captured = capture_call(model, model, jnp.ones(2), methods=MyInterm, types=MyInterm)
    assert type(captured["__call__"]) is MyInterm


def test_method_outputs_do_not_bring_in_unchosen_sows(net):
    """Method outputs are reported as Intermediate, but a module's own sow(Intermediate, ...) is
    kept only when Intermediate is chosen."""
    with Capture(net, types=MyInterm, methods=True) as cap:
        net(X)
    assert "blocks[0].h" not in paths(cap.captured)
    assert {"blocks[0].double", "blocks[0].act", "head.__call__"} <= set(paths(cap.captured))
    assert type(cap.captured["head"]["__call__"]) is nnx.Intermediate
    assert type(cap.captured["blocks"][0]["double"]) is MyInterm
    assert cap.report().messages == ("also sown but not chosen: Perturbation",)


@pytest.mark.parametrize(
    "only, expected_paths, matched",
    [
        (
            "blocks[1]",
            [
                "blocks[1].__call__",
                "blocks[1].act",
                "blocks[1].drop.__call__",
                "blocks[1].h",
                "blocks[1].linear.__call__",
            ],
            3,
        ),
        ("blocks/1/linear", ["blocks[1].linear.__call__"], 1),
        (("blocks", 0, "drop"), ["blocks[0].drop.__call__"], 1),
        (nnx.Linear, ["blocks[0].linear.__call__", "blocks[1].linear.__call__", "head.__call__"], 3),
        (nnx.PathContains("drop"), ["blocks[0].drop.__call__", "blocks[1].drop.__call__"], 2),
        (lambda path, m: path == ("head",), ["head.__call__"], 1),
    ],
)
def test_only_limits_capture_and_leaves_the_rest_alone(net, only, expected_paths, matched):
    dicts = class_dicts()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Capture(net, methods=True, only=only) as cap:
            net(X)
    assert paths(cap.captured) == expected_paths
    assert len(cap.matched) == matched
    for _, module in nnx.iter_modules(net):  # excluded modules' sow created no attribute
        assert not {"h", "double", "hp", "__call__", "act"} & set(vars(module))
    assert_disarmed(net, dicts)


def test_only_matching_nothing_is_reported(net):
    with Capture(net, only="nowhere") as cap:
        net(X)
    assert cap.matched == () and paths(cap.captured) == []
    report = cap.report()
    assert report.messages == ("the `only` filter matched no module, so nothing was captured",)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(only=42), "only=42 is not an NNX filter or a module path"),
        (dict(methods="yes"), "methods='yes': expected True/False or an nnx.Variable type"),
        (dict(types="Linear"), "'Linear' is a type, not an nnx.Variable type"),
        (dict(init=[1]), "init must be an nnx.State, got list"),
        (dict(only=lambda path, module: 1 / 0), "raised ZeroDivisionError: division by zero on the module at "),
        (dict(only=lambda path, module: jnp.ones(3)), "returned an ArrayImpl for the module at .*, not True or False"),
    ],
)
def test_bad_arguments_raise_before_anything_is_armed(net, kwargs, error):
    before = frozen(net)
    with pytest.raises(
        TypeError, match=error.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.").replace(r"\.*", ".*")
    ):
        Capture(net, **kwargs)
    assert_unchanged(net, before)


def test_not_a_module():
    with pytest.raises(TypeError, match="expected an nnx.Module to capture from, got State"):
        Capture(nnx.state(nnx.Linear(2, 2, rngs=nnx.Rngs(0))))


def test_capture_is_entered_once(net):
    cap = Capture(net)
    with cap:
        pass
    with pytest.raises(RuntimeError, match="entered only once"):
        with cap:
            pass


# --------------------------------------------------------------------------- safety


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_failing_body_leaves_model_and_classes_as_before(net, error):
    net.eval()  # no Dropout RNG draws, so the whole state must be bit-for-bit the same
    before = frozen(net)
    dicts = class_dicts()
    with pytest.raises(type(error)):
        with Capture(net, methods=True, types=(nnx.Intermediate, MyInterm, nnx.Perturbation)) as cap:
            net.blocks[0](X)  # sows something first
            raise error
    assert_disarmed(net, dicts)
    assert paths(cap.captured) == [
        "blocks[0].__call__",
        "blocks[0].act",
        "blocks[0].double",
        "blocks[0].drop.__call__",
        "blocks[0].h",
        "blocks[0].hp",
        "blocks[0].linear.__call__",
    ]
    assert_unchanged(net, before)


def test_ctrl_c_while_arming_disarms():
    """A Ctrl-C arriving while modules are being armed is held until arming ends, then raised:
    __exit__ never runs then, so __enter__ itself must disarm."""
    import signal

    fired = []

    class Interrupting(nnx.Module):  # a user's module whose attribute writes can be slow to return
        def __init__(self, rngs):
            self.net = Net(rngs)

        def __setattr__(self, name, value):
            if name == "__captures__" and not fired:  # arming it: the Ctrl-C arrives now
                fired.append(True)
                os.kill(os.getpid(), signal.SIGINT)  # delivered now: the deferral's handler holds it
            super().__setattr__(name, value)

    model = Interrupting(nnx.Rngs(0))
    dicts = class_dicts()
    before = frozen(model)
    with pytest.raises(KeyboardInterrupt):
        with Capture(model, methods=True):
            pytest.fail("the body must not run")
    assert fired
    assert_disarmed(model, dicts)
    assert_unchanged(model, before)


def test_model_state_and_graph_equal_after_capture():
    model = Net(nnx.Rngs(0))
    model.eval()  # no Dropout RNG draws: the whole state must be bit-for-bit the same
    before = frozen(model)
    dicts = class_dicts()
    with Capture(model, methods=True, types=(nnx.Intermediate, MyInterm, nnx.Perturbation)):
        model(X)
    assert_unchanged(model, before)
    assert_disarmed(model, dicts)
    model.head(jnp.ones(4))  # the restored class still works


def test_exception_in_a_method_while_patched(net):
    dicts = class_dicts()

    def bad(model, x):
        model.blocks[0].linear(jnp.ones((2, 5)))  # wrong shape: raises inside a patched method

    with pytest.raises(Exception):  # noqa: B017 - whatever the shape error is, the model is disarmed
        capture_call(net, bad, net, X, methods=True)
    assert_disarmed(net, dicts)


def test_jitted_function_is_captured_and_method_settings_are_not_mixed_up():
    model = Net(nnx.Rngs(0))
    model.eval()
    before = frozen(model)

    @nnx.jit
    def forward(model, x):
        return model(x)

    with Capture(model) as plain:
        y = forward(model, X)
    with Capture(model, methods=True) as methods:
        forward(model, X)
    with Capture(model) as again:  # served from jit's cache: no method outputs may appear
        forward(model, X)
    assert paths(plain.captured) == paths(again.captured) == ["blocks[0].h", "blocks[1].h"]
    assert "head.__call__" in paths(methods.captured)
    assert np.allclose(methods.captured["__call__"].get_value()[0], y)
    assert isinstance(plain.captured["blocks"][0]["h"].get_value()[0], jax.Array)
    assert_unchanged(model, before)
    assert_disarmed(model, class_dicts())


def test_types_sown_in_a_cached_jit_trace_are_still_named():
    model = Net(nnx.Rngs(3))

    @nnx.jit
    def forward(model, x):
        return model(x)

    messages = []
    for _ in range(2):  # the second call runs jit's cached trace: no Python, no sow() runs
        with Capture(model, types=nnx.BatchStat) as cap:
            forward(model, X)
        messages.append(cap.report().messages)
    assert messages[0] == messages[1]
    assert "sown instead: Intermediate, MyInterm, Perturbation" in messages[1][0]


def test_values_traced_by_jax_jit_of_a_closure_are_named_not_hidden():
    model = Net(nnx.Rngs(4))
    model.eval()  # no Dropout RNG draws, which jax.jit of a closure could not write back
    with Capture(model) as cap:
        jax.jit(lambda x: model(x))(X)  # the model is closed over: what it sows are tracers
    messages = cap.report().messages
    assert any(
        m.startswith("2 values (blocks[0].h[0], …) sown under a jax transformation") and "nnx.jit" in m
        for m in messages
    ), messages


def test_two_models_do_not_interfere():
    a, b = Net(nnx.Rngs(0)), Net(nnx.Rngs(1))

    class Other(nnx.Module):
        def __call__(self, x):
            self.sow(MyInterm, "other", x)
            return x

    c = Other()
    with Capture(a) as cap_a:
        with Capture(c, types=MyInterm, methods=True) as cap_c:
            a(X)
            c(X)
        with Capture(b, only="head", methods=True) as cap_b:
            b(X)
            a(X)
    assert paths(cap_a.captured) == ["blocks[0].h", "blocks[1].h"]
    assert len(cap_a.captured["blocks"][0]["h"].get_value()) == 2
    assert paths(cap_c.captured) == ["__call__", "other"]
    assert paths(cap_b.captured) == ["head.__call__"]
    assert cap_b.seen_types == (nnx.Intermediate, MyInterm, nnx.Perturbation)
    assert cap_c.seen_types == (MyInterm, nnx.Intermediate)
    assert not any("__captures__" in vars(m) for model in (a, b, c) for _, m in nnx.iter_modules(model))


def test_nested_capture_of_the_same_model_restores_the_outer_one(net):
    with Capture(net) as outer:
        net(X)
        with Capture(net, types=MyInterm) as inner:
            net(X)
        net(X)
    assert len(outer.captured["blocks"][0]["h"].get_value()) == 2
    assert len(inner.captured["blocks"][0]["double"].get_value()) == 1
    assert not any("__captures__" in vars(m) for _, m in nnx.iter_modules(net))


def test_armed_model_state_still_works_with_jax_tree_functions(net):
    # nnx.List keys its children 0, 1, ...: a "__captures__" key beside them would not sort.
    with Capture(net, methods=True) as cap:
        state = jax.tree.map(lambda v: v, nnx.state(net))
        grads = nnx.grad(lambda m, x: m(x).sum())(net, X)
    assert len(jax.tree.leaves(state)) >= len(jax.tree.leaves(nnx.state(net)))
    assert "blocks[0].h" in paths(cap.captured)
    leaves = jax.tree.leaves(cap.captured)
    assert leaves and not any(
        isinstance(v, jax.core.Tracer) for v in leaves
    )  # values from inside nnx.grad are concrete
    assert len(cap.captured["blocks"][0]["h"].get_value()) == 1  # from the call under nnx.grad
    assert jax.tree.structure(grads) == jax.tree.structure(nnx.state(net, nnx.Param))


def test_capture_call_accepts_model_method_and_jit_function(net):
    _, by_model = capture_call(net, net, X)
    _, by_method = capture_call(net, net.blocks[0].act, X, methods=True, only="blocks[0]")
    jitted = nnx.jit(lambda model, x: model(x))
    _, by_jit = capture_call(net, jitted, net, X)
    assert paths(by_model) == paths(by_jit) == ["blocks[0].h", "blocks[1].h"]
    assert paths(by_method) == ["blocks[0].act"]


# --------------------------------------------------------------------------- Linen through ToNNX


def test_linen_sow_through_tonnx_is_captured():
    model = Bridged(nnx.Rngs(0))
    nnx.bridge.lazy_init(model.mlp, X)
    before = frozen(model)
    params = jax.tree.map(np.asarray, nnx.state(model, nnx.Param))
    dicts = class_dicts()

    @nnx.jit
    def forward(model, x):
        return model(x)

    with Capture(model, methods=True) as cap:
        model(X)
        forward(model, X)
    assert paths(cap.captured) == ["__call__", "mlp.Inner_0", "mlp.__call__", "mlp.hidden", "pre.__call__"]
    assert len(cap.captured["mlp"]["hidden"].get_value()) == 2
    assert len(cap.captured["mlp"]["Inner_0"].get_value()["y"]) == 2
    assert paths(flatten_captured(cap.captured))[:3] == ["__call__[0]", "__call__[1]", "mlp.Inner_0.y[0]"]
    # ToNNX draws from its RNG streams on every call (captured or not); all else is as before.
    assert nnx.split(model)[0] == before[0]
    after = nnx.state(model, nnx.Param)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(params)))
    assert_disarmed(model, dicts)


def test_tonnx_called_with_mutable_keeps_its_updates_under_capture():
    """A ToNNX call given `mutable` (Linen batch statistics in training) updates the model exactly
    as it does without a capture."""

    class LinenBN(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.BatchNorm(use_running_average=False)(x)

    def run(captured: bool):
        model = nnx.bridge.ToNNX(LinenBN(), rngs=nnx.Rngs(0))
        nnx.bridge.lazy_init(model, X)
        if captured:
            with Capture(model, methods=True):
                model(X * 3 + 1, mutable=["batch_stats"])
        else:
            model(X * 3 + 1, mutable=["batch_stats"])
        return [np.asarray(v) for v in jax.tree.leaves(nnx.state(model, nnx.BatchStat))]

    plain, under_capture = run(False), run(True)
    assert plain and not np.allclose(plain[0], 0.0)  # the running mean moved
    assert all(np.array_equal(a, b) for a, b in zip(plain, under_capture))


def test_tonnx_called_with_mutable_true_captures_what_linen_sowed():
    """flax's bridge guide: `model(x, mutable=True)` (so Linen's sow runs) under a capture collects
    what Linen sowed in that call (nothing before), and the model gets the attribute it gets
    without a capture; a second call captures only its own value, not the one already stored."""

    class LinenSow(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.Dense(3)(x)
            self.sow("intermediates", "dot_sum", jnp.sum(y))
            return y

    def run(captured: bool):
        model = nnx.bridge.lazy_init(nnx.bridge.ToNNX(LinenSow(), rngs=nnx.Rngs(0)), X)
        model(X, mutable=True)  # the attribute dot_sum now holds one value
        if not captured:
            model(X, mutable=True)
            return model, None
        with Capture(model) as cap:
            model(X, mutable=True)
        return model, cap.captured

    plain, _ = run(False)
    model, captured = run(True)
    assert paths(captured) == ["dot_sum"]
    assert len(captured["dot_sum"].get_value()) == 1
    np.testing.assert_allclose(captured["dot_sum"].get_value()[0], plain.dot_sum.get_value()[1])
    assert len(model.dot_sum.get_value()) == len(plain.dot_sum.get_value()) == 2
    assert "__captures__" not in vars(model)
    # mutable without the intermediates collection: Linen's sow does nothing, so neither does ours.
    with Capture(model) as cap:
        model(X, mutable=["batch_stats"])
    assert paths(cap.captured) == []


def test_tonnx_outside_only_still_runs():
    model = Bridged(nnx.Rngs(0))
    nnx.bridge.lazy_init(model.mlp, X)
    _, captured = capture_call(model, model, X, methods=True, only="pre")
    assert paths(captured) == ["pre.__call__"]


# --------------------------------------------------------------------------- gradients


class Scaled(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        h = self.perturb("h", self.linear(x))
        self.sow(nnx.Intermediate, "h", h)
        return self.drop(h**2)


def test_intermediate_grads_match_the_analytic_gradient():
    model = Scaled(nnx.Rngs(0))
    model.eval()
    result = intermediate_grads(model, lambda m, x: m(x).sum(), X)
    assert isinstance(result, GradResult)
    h = model.linear(X)
    assert np.allclose(result.grads["h"].get_value(), 2 * h)  # d/dh sum(h**2)
    assert np.allclose(result.forward["h"].get_value()[0], h)
    assert np.isclose(result.loss, (h**2).sum())
    assert type(result.grads["h"]) is nnx.Perturbation


def test_intermediate_grads_leaves_the_model_unchanged_rng_counts_included():
    model = Scaled(nnx.Rngs(0))  # train mode: Dropout draws from its RNG stream
    before = frozen(model)
    dicts = class_dicts()
    result = intermediate_grads(model, lambda m, x: m(x).mean(), X, methods=True)
    assert "__call__" in paths(result.forward)
    assert_unchanged(model, before)
    assert not any("__captures__" in vars(m) for _, m in nnx.iter_modules(model))
    assert class_dicts() == dicts and patched_classes() == {}


def test_intermediate_grads_through_jit_and_errors(net):
    model = Scaled(nnx.Rngs(0))
    model.eval()
    loss = nnx.jit(lambda m, x: m(x).sum())
    result = intermediate_grads(model, loss, X)
    assert np.allclose(result.grads["h"].get_value(), 2 * model.linear(X))
    with pytest.raises(TypeError, match=r"must return a scalar; it returned shape \(2, 3\)"):
        intermediate_grads(model, lambda m, x: m(x), X)
    plain = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
    with pytest.raises(NoPerturbations, match="no module called perturb\\(\\) under Perturbation"):
        intermediate_grads(plain, lambda m, x: m(x).sum(), X)


# --------------------------------------------------------------------------- report


def test_report_rows_stats_and_histograms_match_numpy():
    x = jnp.concatenate([jnp.linspace(-2.0, 6.0, 999), jnp.array([jnp.nan])])

    class Sower(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "x", x)
            self.sow(nnx.Intermediate, "x", x[:10] * 0 + 1)  # constant: one full bin
            self.sow(nnx.Intermediate, "nan", jnp.full(3, jnp.nan))
            self.sow(nnx.Intermediate, "ints", jnp.arange(8))
            return x

    model = Sower()
    _, captured = capture_call(model, model, x)
    report = capture_report(captured, bins=8)
    assert [r.path_text for r in report.snapshot.rows] == ["ints[0]", "nan[0]", "x[0]", "x[1]"]
    hist = dict(zip([r.path_text for r in report.snapshot.rows], report.hist))
    finite = np.asarray(x)[np.isfinite(np.asarray(x))]
    counts, edges = np.histogram(finite, bins=8)
    assert hist["x[0]"][:2] == [-2.0, 6.0]
    assert hist["x[0]"][2:] == counts.tolist()  # the NaN is counted in the row's stats, not the bins
    assert report.snapshot["x[0]"].stats["nan_count"] == 1
    assert hist["x[1]"] == [1.0, 1.0, 10, 0, 0, 0, 0, 0, 0, 0]
    assert hist["nan[0]"] is None  # no finite value: no histogram
    assert hist["ints[0]"] == [0.0, 7.0, 1, 1, 1, 1, 1, 1, 1, 1]
    payload = report.to_dict()
    json.dumps(payload, allow_nan=False)  # strict JSON for the widget
    assert payload["hist"]["bins"] == 8 and payload["hist"]["rows"] == list(report.hist)
    assert payload["types"] == ["Intermediate"] and payload["grads"] is None and payload["messages"] == []


def test_report_fetches_only_numbers_in_one_transfer_each(monkeypatch):
    big = jnp.ones((256, 1024))  # 1 MiB

    class Sower(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "a", x)
            self.sow(nnx.Intermediate, "b", x * 2)
            return x

    model = Sower()
    _, captured = capture_call(model, model, big)
    fetched = []
    real = jax.device_get

    def spy(tree):
        out = real(tree)
        fetched.append(sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(out)))
        return out

    monkeypatch.setattr(jax, "device_get", spy)
    with jax.transfer_guard_device_to_host("disallow"):
        report = capture_report(captured)
    assert len(fetched) == 2  # statistics, then histograms: never an array
    assert sum(fetched) < 1024
    assert [h[2:] for h in report.hist] == [[256 * 1024] + [0] * 15] * 2  # constant: all in the first bin


def test_report_messages_name_what_was_sown(net):
    with Capture(net, types="Perturbation") as cap:
        net(X)
    assert cap.report().messages == ("also sown but not chosen: Intermediate, MyInterm",)
    with Capture(net, types=nnx.BatchStat) as cap:
        net(X)
    assert cap.report().messages == (
        "nothing was sown under BatchStat; sown instead: Intermediate, MyInterm, Perturbation "
        "(choose those types to capture them)",
    )
    plain = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    _, captured = capture_call(plain, plain, X)
    assert (
        capture_report(captured)
        .messages[0]
        .startswith("nothing was sown under Intermediate: no module called sow() or perturb()")
    )


def test_report_with_gradients_and_escaped_html():
    class Evil(nnx.Module):
        def __call__(self, x):
            x = self.perturb("<img src=x onerror=alert(1)>", x)
            self.sow(nnx.Intermediate, "<script>alert(1)</script>", x)
            return (x**2).sum()

    result = intermediate_grads(Evil(), lambda m, x: m(x), X)
    report = capture_report(result.forward, grads=result.grads)
    assert isinstance(report, CaptureReport)
    html = report.to_html()
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    text = report.to_text()
    assert "gradients at 1 perturbation" in text and "['<img src=x onerror=alert(1)>']" in text
    payload = report.to_dict()
    assert payload["grads"]["snapshot"]["rows"]["key"] == ["<img src=x onerror=alert(1)>"]
    assert len(payload["grads"]["hist"]["rows"]) == 1
    bundle = report._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_flatten_handles_custom_reductions():
    state = nnx.State(
        {
            "total": nnx.Intermediate(jnp.ones(3)),  # a custom reduce_fn: one array, no tuple
            "pair": nnx.Intermediate({"a": jnp.ones(1), "b": (jnp.ones(2), None)}),
        }
    )
    flat = flatten_captured(state)
    assert paths(flat) == ["pair.a", "pair.b[0]", "pair.b[1]", "total"]
    report = capture_report(state)
    assert [r.status for r in report.snapshot.rows] == ["ok", "ok", "non_numeric", "ok"]
    assert report.hist[2] is None


SHARDED = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from flax import nnx
    from nnx_lab.core.capture import capture_call, capture_report

    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    x = jax.device_put(jax.random.normal(jax.random.key(0), (64, 16)), jax.NamedSharding(mesh, jax.P("data")))

    class Sower(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "x", x)
            return x

    model = Sower()
    _, captured = capture_call(model, model, x)
    with jax.transfer_guard_device_to_host("disallow"):
        report = capture_report(captured, bins=8)
    counts, _ = np.histogram(np.asarray(x), bins=8)
    print(json.dumps({"hist": report.hist[0], "numpy": counts.tolist(), "devices": report.snapshot.rows[0].devices}))
""")


def test_histogram_of_a_sharded_array_on_eight_devices():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["hist"][2:] == out["numpy"]
    assert out["devices"] == "cpu:0-7"


# --------------------------------------------------------------------------- scans (nnx.RNN)


def test_an_armed_modules_own_code_sees_only_the_chosen_types_in_its_captures():
    """Code that reads ``__captures__`` while a capture is armed (as flax's sow does, or the user's
    own) sees the chosen types' entries only, and their types compare by identity (== and !=)."""
    answers = []

    class Probe(nnx.Module):
        def __call__(self, x):
            for v in self.__captures__:
                t = type(v)
                answers.append((t, t != nnx.Intermediate, t != t, t == nnx.Intermediate, t == t))
            self.sow(nnx.Intermediate, "y", x)
            return x

    probe = Probe()
    with Capture(probe) as cap:
        probe(X)
    assert answers == [(nnx.Intermediate, False, False, True, True)]
    assert paths(cap.captured) == ["y"] and cap.seen_types == (nnx.Intermediate,)


def test_rnn_with_methods_is_one_line_upstream_limit_and_model_unchanged():
    """jax's scan compares the carry's tree structures with `!=` (once the marker's __ne__ ended in
    Variable.__eq__). Method outputs recorded inside the scan change the carry, exactly as under
    flax's own nnx.capture(method_outputs=...): a one-line error saying so."""
    rnn = nnx.RNN(nnx.SimpleCell(2, 3, rngs=nnx.Rngs(0)))
    xs = jnp.ones((1, 4, 2))
    with pytest.raises(TypeError, match="carry"):  # flax's own capture: the same failure
        nnx.capture(rnn, nnx.Intermediate, method_outputs=nnx.Intermediate)(xs)
    for _, m in nnx.iter_modules(rnn):  # flax leaves its __captures__ behind when the call fails
        if "__captures__" in vars(m):
            delattr(m, "__captures__")
    before = frozen(rnn)
    with pytest.raises(TypeError) as info:
        with Capture(rnn, methods=True):
            rnn(xs)
    message = str(info.value)
    assert "\n" not in message and "inside a jax scan" in message
    assert "flax's own nnx.capture fails the same way there (an upstream limit)" in message
    graphdef, state = frozen(rnn)  # as before, but the RNN's own rng count: the call drew it before failing
    assert graphdef == before[0] and jax.tree.structure(state) == jax.tree.structure(before[1])
    assert all(
        np.array_equal(a, b)
        for (p, a), (_, b) in zip(nnx.to_flat_state(state), nnx.to_flat_state(before[1]))
        if p != ("rngs", "count")
    )
    assert patched_classes() == {}
    with Capture(rnn) as cap:  # without methods nothing is sown in the scan: fine
        rnn(xs)
    assert paths(cap.captured) == []


# --------------------------------------------------------------------------- a method and a sow of one name


class Guide(nnx.Module):
    """flax's extracting_intermediates guide: method `features` sows 'features' too."""

    def __init__(self, rngs):
        self.dense1 = nnx.Linear(8, 32, rngs=rngs)

    def features(self, x):
        feature = nnx.relu(self.dense1(x))
        self.sow(nnx.Intermediate, "features", feature)
        self.sow(MyInterm, self.negated, -feature)
        return feature

    negated = "features"  # the name of the MyInterm sow

    def loss(self, a, b):
        return jnp.sum((a - b) ** 2)

    def __call__(self, x, y):
        return self.loss(self.features(x), self.features(y))


def _entries(state):
    return {
        path_text(p): [np.asarray(a) for a in v.get_value()]
        if isinstance(v.get_value(), tuple)
        else [np.asarray(v.get_value())]
        for p, v in nnx.to_flat_state(state)
    }


def test_method_and_sow_of_one_name_match_flaxs_entries():
    model = Guide(nnx.Rngs(0))
    x, y = jax.random.normal(jax.random.key(1), (2, 8))
    _, theirs = nnx.capture(model, nnx.Intermediate, method_outputs=nnx.Intermediate)(x, y)
    with Capture(model, methods=True) as cap:
        model(x, y)
    ours, expected = _entries(cap.captured), _entries(theirs)
    assert sorted(ours) == sorted(expected) == ["__call__", "dense1.__call__", "features", "loss"]
    assert len(ours["features"]) == 4  # sow, output, sow, output: in call order
    for key in expected:
        assert len(ours[key]) == len(expected[key])
        assert all(np.allclose(a, b) for a, b in zip(ours[key], expected[key]))


def test_method_output_of_an_unchosen_type_and_a_sow_of_the_same_name_both_stay():
    model = Guide(nnx.Rngs(0))
    x, y = jax.random.normal(jax.random.key(1), (2, 8))
    with Capture(model, methods=True, types=MyInterm) as cap:
        model(x, y)
    got = {p: (type(v), len(v.get_value())) for p, v in nnx.to_flat_state(cap.captured)}
    assert got[("features",)] == (MyInterm, 2) and got[("features()",)] == (nnx.Intermediate, 2)
    assert np.allclose(cap.captured["features"].get_value()[0], -cap.captured["features()"].get_value()[0])


# --------------------------------------------------------------------------- flax's own nnx.capture inside


@nnx.capture(nnx.Intermediate)
def guide_forward(model, x, y):  # decorated before any capture is armed, as in flax's guide
    return model(x, y)


class Guide2(Guide):
    negated = "negated"


def test_flaxs_own_capture_inside_takes_over_and_returns_what_flax_returns():
    model = Guide2(nnx.Rngs(0))
    x, y = jax.random.normal(jax.random.key(1), (2, 8))
    before = frozen(model)
    _, alone = nnx.capture(model, nnx.Intermediate)(x, y)
    with Capture(model, types=(nnx.Intermediate, MyInterm)) as cap:
        model(x, y)  # ours: 2 features, 2 negated
        result, inside = nnx.capture(model, nnx.Intermediate)(x, y)  # flax's guide, verbatim
        _, decorated = guide_forward(model, x, y)
        _, jitted = nnx.jit(lambda m, a, b: nnx.capture(m, nnx.Intermediate)(a, b))(model, x, y)
        model(x, y)  # ours again
    for theirs in (inside, decorated, jitted):  # the user's call returns exactly what flax returns
        assert type(theirs) is type(alone) and _entries(theirs).keys() == _entries(alone).keys()
        assert all(np.allclose(a, b) for a, b in zip(_entries(theirs)["features"], _entries(alone)["features"]))
    assert np.allclose(result, nnx.capture(model, nnx.Intermediate)(x, y)[0])
    got = {p: (type(v), len(v.get_value())) for p, v in nnx.to_flat_state(cap.captured)}
    # as an inner nnx.capture replaces an outer one in flax: nothing of those three calls is ours,
    # MyInterm (which flax was not asked for) included; the two calls outside them are
    assert got == {("features",): (nnx.Intermediate, 4), ("negated",): (MyInterm, 4)}
    assert cap.inside_own == 3
    report = cap.report()
    assert report.messages[0] == (
        "3 calls ran inside your own nnx.capture: what they sowed went to that capture's result, not here"
    )
    assert report.messages[0] in report.to_text() and report.messages[0] in report.to_dict()["messages"]
    assert_disarmed(model, class_dicts())
    assert_unchanged(model, before)


def test_flaxs_own_capture_inside_gets_only_what_flax_gives_it_and_ours_records_nothing_of_it():
    model = Guide2(nnx.Rngs(0))
    x, y = jax.random.normal(jax.random.key(1), (2, 8))
    _, alone = nnx.capture(model, nnx.Intermediate)(x, y)
    # flax's own nesting: the outer capture keeps nothing of a call made inside an inner one
    _, flax_outer, _ = nnx.capture(lambda m: nnx.capture(m, nnx.Intermediate)(x, y), nnx.Intermediate, MyInterm)(model)
    assert paths(flax_outer) == []
    with Capture(model, types=(nnx.Intermediate, MyInterm), methods=True) as cap:
        _, inside = nnx.capture(model, nnx.Intermediate)(x, y)
    assert paths(inside) == paths(alone) == ["features"]  # no method output of ours in the user's result
    assert all(np.allclose(a, b) for a, b in zip(_entries(inside)["features"], _entries(alone)["features"]))
    assert paths(cap.captured) == [] and cap.inside_own == 1  # nor MyInterm, nor method outputs
    report = cap.report()
    assert report.messages == (
        "1 call ran inside your own nnx.capture: what it sowed went to that capture's result, not here",
    )  # not "no module called sow()"
    assert "__captures__" not in vars(model) and patched_classes() == {}


class VmapBroadcast(nnx.Module):
    """flax's guide (NNX transforms and capturing): the user's own capture inside an nnx.vmap that
    broadcasts the model, sowing and perturbing per example."""

    def __init__(self, dim):
        self.w = nnx.Param(jax.random.normal(jax.random.key(0), dim))

    def __call__(self, x):
        x = self.perturb("grad_of_x", x)
        y = jnp.dot(x, self.w)
        self.sow(nnx.Intermediate, "y", y)
        return y


class VmapHost(nnx.Module):
    def __init__(self):
        self.inner = VmapBroadcast(4)

    def __call__(self, x):
        def one(model, x):
            return nnx.capture(model, nnx.Intermediate)(x)

        return nnx.vmap(one, in_axes=(None, 0))(self.inner, x)


def test_flaxs_own_capture_inside_vmap_over_a_broadcast_model():
    model, x = VmapHost(), jnp.ones((3, 4))
    expected_y, expected = model(x)
    with Capture(model, types=(nnx.Intermediate, nnx.Perturbation)) as cap:
        y, theirs = model(x)
        jitted_y, _ = nnx.jit(lambda m, a: m(a))(model, x)
    assert np.allclose(y, expected_y) and np.allclose(jitted_y, expected_y)
    assert paths(theirs) == paths(expected) == ["y"]
    assert theirs["y"].get_value()[0].shape == expected["y"].get_value()[0].shape == (3,)
    assert paths(cap.captured) == [] and cap.inside_own == 2
    assert "__captures__" not in vars(model) and "__captures__" not in vars(model.inner)


def test_reading_captures_during_a_capture_shows_what_flax_shows():
    model = Guide2(nnx.Rngs(0))
    shown = {}

    @nnx.capture(nnx.Intermediate)
    def flax_reads(m):
        shown["flax"] = repr(m.__captures__)

    flax_reads(model)
    with Capture(model, methods=True):
        shown["ours"] = repr(model.__captures__)
        shown["ours_dense"] = repr(model.dense1.__captures__)
    assert "_Seen" not in shown["ours"] and "_MethodOutputs" not in shown["ours"]
    assert shown["ours"] == shown["flax"] == shown["ours_dense"]
    assert not hasattr(model, "__captures__")


def test_methods_capture_after_nnx_tabulate():
    """flax's tabulate leaves nnx.Module's own methods (sow, train...) copied onto the classes it
    patched; a method capture must not wrap them (a wrapped sow recursed until RecursionError)."""
    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    nnx.tabulate(model, jnp.ones((1, 2)))
    y, captured = capture_call(model, model, jnp.ones((1, 2)), methods=True)
    assert y.shape == (1, 3) and captured
