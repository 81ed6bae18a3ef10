"""Every sharding a user can make, on 8 host devices (in a subprocess: the device count is fixed
when jax starts): Auto, Explicit and mixed mesh axes, replicated and partially replicated arrays,
models made by nnx.eval_shape under a mesh, and sharding annotations beside the placement."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    from flax import nnx
    from IPython.testing.globalipapp import start_ipython
    import nnx_lab
    from nnx_lab.core import compat
    from nnx_lab.core.stats import compute_stats

    out = {"stats": [], "rows": {}, "compare": []}
    rng = np.random.default_rng(0)
    kinds = {"auto": (AxisType.Auto,) * 2, "explicit": (AxisType.Explicit,) * 2,
             "mixed": (AxisType.Explicit, AxisType.Auto)}
    specs = {"rows": P("data", None), "cols": P(None, "model"), "both": P("data", "model"),
             "flat": P(("data", "model"), None), "replicated": P()}
    for kind, types in kinds.items():
        mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=types)
        for name, spec in specs.items():
            x = (rng.normal(size=(16, 8)) * 3 + 1).astype(np.float32)
            x[1, 2] = np.nan
            a = jax.device_put(x, NamedSharding(mesh, spec))
            with jax.transfer_guard_device_to_host("disallow"):
                [got] = compute_stats([a])
            f = x[np.isfinite(x)].astype(np.float64)
            want = [f.mean(), f.std(), f.min(), f.max(), float(np.sqrt((f ** 2).sum())), 1]
            have = None if not isinstance(got, dict) else [got[k] for k in ("mean", "std", "min", "max", "norm", "nan_count")]
            out["stats"].append([kind, name, have, want, None if isinstance(got, dict) else str(got)])
            w = rng.normal(size=(16, 8)).astype(np.float32)
            moved = w.copy()
            moved[3, 4] += 1.0
            try:
                c = nnx_lab.compare({"w": jax.device_put(w, NamedSharding(mesh, spec))},
                                    {"w": jax.device_put(moved, NamedSharding(mesh, spec))})
                out["compare"].append([kind, name, c.counts, c.rows[0].max_abs, None])
            except Exception as e:
                out["compare"].append([kind, name, None, None, f"{type(e).__name__}: {e}"[:300]])

    mesh8 = jax.make_mesh((8,), ("data",))
    # Manual axes exist inside shard_map: the values there are tracers, said as such.
    manual = {}
    def per_shard(xs):
        manual["rows"] = [[r.status, list(r.shape)] for r in nnx_lab.snapshot({"x": xs}).rows]
        return xs * 2
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh8, P("data")))
    jax.shard_map(per_shard, mesh=mesh8, in_specs=P("data"), out_specs=P("data"))(x)
    out["manual"] = manual["rows"]

    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    meta = {"kernel_metadata": {"out_sharding": (None, "model")}}
    if not compat.has("nnx.view"):  # flax 0.11 has neither out_sharding nor eager sharding
        print("RESULT " + json.dumps(out))
        raise SystemExit(0)
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(lambda: nnx.Linear(4, 8, rngs=nnx.Rngs(0), **meta))
        real = nnx.Linear(4, 8, rngs=nnx.Rngs(0), **meta)
        wrong = nnx.Linear(4, 8, rngs=nnx.Rngs(0), **meta)
        ruled = nnx.Linear(4, 8, rngs=nnx.Rngs(0), kernel_metadata={
            "out_sharding": ("embed", "mlp"), "sharding_rules": (("embed", None), ("mlp", "model"))})
    logical = nnx.Linear(4, 8, rngs=nnx.Rngs(0), kernel_metadata={  # no mesh, annotation kept
        "out_sharding": ("embed", "mlp"), "eager_sharding": False})
    compat.set_value(wrong.kernel, jax.device_put(compat.get_value(wrong.kernel), NamedSharding(mesh, P("data", None))))
    for name, model in (("abstract", abstract), ("real", real), ("wrong", wrong), ("ruled", ruled), ("logical", logical)):
        snap = nnx_lab.snapshot(model)
        out["rows"][name] = {r.path_text: [r.status, r.sharding, r.devices, r.logical, r.mismatch] for r in snap.rows}
        out["rows"][name]["text"] = snap.to_text()
        out["rows"][name]["payload"] = snap.to_dict()["rows"].get("mismatch")

    ip = start_ipython()
    ip.user_ns.update(abstract=abstract, nnx=nnx)
    ip.run_line_magic("load_ext", "nnx_lab")
    result = ip.run_cell("%nnx_split abstract nnx.Param ...")
    out["split_ok"] = result.success and "param" in ip.user_ns
    viewer = nnx_lab.watch(abstract, display=False)
    out["watch"] = viewer.status["state"]
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def meshes():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.rsplit("RESULT ", 1)[1])  # IPython 7 writes a title escape first


def test_manual_axes_inside_shard_map_are_tracer_rows(meshes):
    assert meshes["manual"] == [["tracer", [2]]]  # one of the 8 shards of 16 values


def test_statistics_on_every_mesh_kind_equal_numpy_without_gathering(meshes):
    assert len(meshes["stats"]) == 15
    for kind, name, have, want, error in meshes["stats"]:
        assert error is None, (kind, name, error)  # Explicit axes raised ShardingTypeError before
        for h, w in zip(have, want):
            assert h == pytest.approx(w, rel=1e-5, abs=1e-6), (kind, name, have, want)


def test_compare_on_every_mesh_kind_finds_the_one_changed_value(meshes):
    assert len(meshes["compare"]) == 15
    for kind, name, counts, max_abs, error in meshes["compare"]:
        assert error is None, (kind, name, error)  # Explicit axes raised ShardingTypeError (flax's ViT example)
        assert counts == {"changed": 1} and max_abs == pytest.approx(1.0, rel=1e-6), (kind, name, counts, max_abs)


@pytest.mark.needs_flax("nnx.view")  # flax 0.11 predates out_sharding and jax.set_mesh meshes in eval_shape
def test_eval_shape_models_under_a_mesh_are_abstract_rows_with_their_sharding(meshes):
    rows = meshes["rows"]["abstract"]
    status, sharding, devices, logical, mismatch = rows["kernel"]
    assert status == "abstract" and sharding == "P(None, 'model') @ mesh(data=2, model=4)"
    assert devices == "abstract mesh \u00d78" and logical == "(None, 'model')" and mismatch is None
    assert "(abstract: no arrays yet)" in rows["text"]
    assert meshes["split_ok"] and meshes["watch"] == "live"  # a 54-line traceback and 'error' before


@pytest.mark.needs_flax("nnx.view")
def test_the_logical_annotation_shows_beside_the_placement_and_disagreement_is_said(meshes):
    assert meshes["rows"]["real"]["kernel"][3:] == ["(None, 'model')", None]
    wrong = meshes["rows"]["wrong"]["kernel"]
    assert wrong[1] == "P('data', None) @ mesh(data=2, model=4)"
    assert wrong[4] == "placed P('data', None) but annotated P(None, 'model')"
    assert "!= placed P('data', None) but annotated P(None, 'model')" in meshes["rows"]["wrong"]["text"]
    assert meshes["rows"]["wrong"]["payload"] == [None, wrong[4]]
    # Logical names mapped to mesh axes by the Variable's sharding_rules, as flax maps them.
    assert meshes["rows"]["ruled"]["kernel"][1:] == [
        "P(None, 'model') @ mesh(data=2, model=4)",
        "cpu:0-7",
        "('embed', 'mlp')",
        None,
    ]
    assert meshes["rows"]["logical"]["kernel"][3:] == [
        "('embed', 'mlp')",
        "annotated P('embed', 'mlp') but on one device",
    ]


class FakeAccelerator:
    """A device whose backend reports memory, as GPU and TPU backends do (CPU reports none)."""

    platform, device_kind = "gpu", "<b>H100</b>"

    def __init__(self, i):
        self.id = i

    def memory_stats(self):
        return {"bytes_in_use": (self.id + 1) << 30, "peak_bytes_in_use": 3 << 30, "bytes_limit": 80 << 30}


def test_device_memory_in_use_peak_and_limit_per_device():
    import jax.numpy as jnp

    import nnx_lab
    from nnx_lab.core.snapshot import device_summary

    summary = device_summary([FakeAccelerator(1), FakeAccelerator(0)])
    assert [(d["id"], d["bytes_in_use"], d["peak_bytes_in_use"], d["bytes_limit"]) for d in summary["devices"]] == [
        (0, 1 << 30, 3 << 30, 80 << 30),
        (1, 2 << 30, 3 << 30, 80 << 30),
    ]
    snap = nnx_lab.snapshot({"w": jnp.ones(3)})
    snap.device_summary = summary
    assert (
        "memory: gpu:0 1.0 GiB (peak 3.0 GiB) of 80.0 GiB; gpu:1 2.0 GiB (peak 3.0 GiB) of 80.0 GiB" in snap.to_text()
    )
    assert "<b>H100</b>" not in snap._repr_html_() and "gpu:1 2.0 GiB" in snap._repr_html_()
    assert snap.to_dict()["devices"]["devices"][1]["bytes_limit"] == 80 << 30  # the viewer's memory strip
    cpu = device_summary()
    assert all(d["bytes_in_use"] is None or isinstance(d["bytes_in_use"], int) for d in cpu["devices"])
