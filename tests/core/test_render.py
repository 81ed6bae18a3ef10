"""Static renderings: readable, never raise, every user string shown as text."""

import json

import jax.numpy as jnp
from flax import nnx

import nnx_lab
from nnx_lab.core import compat

EVIL_CLASS = "Evil<img src=x onerror=alert(1)>"
EVIL_KEY = "<script>alert('x')</script>"


def evil_model():
    cls = type(EVIL_CLASS, (nnx.Module,), {})
    model = cls()
    model.d = nnx.data({EVIL_KEY: nnx.Param(jnp.ones(2))})  # a plain dict: flax 0.11 has no nnx.Dict
    model.sub = type("Sub<b>", (nnx.Module,), {})()
    model.sub.w = nnx.Param(jnp.zeros(3), note="<i>x</i>")
    return model


def test_html_escapes_every_user_string():
    page = nnx_lab.snapshot(evil_model())._repr_html_()
    for raw in ("<img", "<script", "Sub<b>", "<i>x</i>"):
        assert raw not in page
    assert "Evil&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "Sub&lt;b&gt;" not in page  # class names of inner modules are not in the flat table


def test_text_table_is_readable():
    snap = nnx_lab.snapshot(nnx.Linear(3, 4, rngs=nnx.Rngs(0)))
    net_text = repr(snap)
    lines = net_text.splitlines()
    dev = snap.device_summary
    assert lines[0] == f"Linear: 2 variables, 16 elements, 64 B on {dev['count']}× {dev['device_kind']}"
    assert lines[1].split() == ["path", "type", "shape", "dtype", "bytes", "mean", "std", "min", "max", "norm"]
    assert lines[2].split()[:5] == ["bias", "Param", "(4,)", "float32", "16"]
    assert lines[-1] == "totals: Param 2 (16, 64 B)"


def test_nonfinite_banner_names_first_path():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    compat.set_value(model.kernel, compat.get_value(model.kernel).at[1, 1].set(jnp.inf))
    snap = nnx_lab.snapshot(model)
    assert snap.first_nonfinite.path == ("kernel",)
    assert "!! NaN/Inf in kernel: 1 Inf" in repr(snap)
    assert "NaN/Inf in kernel: 1 Inf" in snap._repr_html_()


def test_repr_never_raises_on_deleted_buffers():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    compat.get_value(model.kernel).delete()
    snap = nnx_lab.snapshot(model)
    assert "deleted" in repr(snap) and "deleted" in snap._repr_html_()


def test_to_dict_is_json_and_columnar(net):
    snap = nnx_lab.snapshot(net)
    data = json.loads(json.dumps(snap.to_dict()))
    rows, tables = data["rows"], data["tables"]
    n = len(snap)
    assert all(len(col) == n for col in rows.values()) and all(len(c) == n for c in data["stats"].values())
    # Rebuild every path from the node tree and compare.
    nodes = data["nodes"]

    def path_of(parent, key):
        out = [key]
        while parent != -1:
            out.append(nodes["key"][parent])
            parent = nodes["parent"][parent]
        return tuple(reversed(out))

    rebuilt = [path_of(p, k) for p, k in zip(rows["parent"], rows["key"])]
    assert rebuilt == [r.path for r in snap.rows]
    assert [tables["type"][i] for i in rows["type"]] == [r.type for r in snap.rows]
    i = [r.path for r in snap.rows].index(("blocks", 0, "linear", "kernel"))
    assert data["stats"]["mean"][i] == float(f"{snap.rows[i].stats['mean']:.4g}")
    assert data["totals"]["all"]["count"] == n
    assert data["devices"]["count"] >= 1
