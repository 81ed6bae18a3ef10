"""Run flax's own guide notebooks with nnx_lab added, and report every nnx_lab failure.

    PYTHONPATH=$PWD python tools/flax_guides.py GUIDE.ipynb [GUIDE.ipynb ...] [--timeout 120]
        [--devices N] [--out DIR] [--json FILE]

For each notebook it executes two copies with nbclient (errors allowed, so a guide's own failure on
the installed flax does not stop the run):

- the baseline: the guide as it is (cells that need the network or a dataset are blanked in both);
- the instrumented copy: ``%load_ext nnx_lab`` at the top and, after every original code cell, a
  probe cell. The probe looks in the user namespace for Modules, Optimizers and States that are new
  or rebound since the last probe and, for each, runs ``nnx_lab.snapshot(obj).to_text()``,
  ``%%nnx_split NAME nnx.Param ...`` with a body that leaves the state as it is (the model's arrays
  are checked to be the same afterwards), ``nnx_lab.watch(obj, display=False).status`` (the viewer
  is kept, so it also refreshes after every later cell; an error status there is reported) and, for
  Modules, ``nnx_lab.view_report(obj).to_text()``. Then the previous cell's first call of each
  Module (``y = model(x)``, ``train_step(model, x)``, ``nnx.capture(model, ...)(x)``) runs again
  under ``%%nnx_capture`` on an ``nnx.clone`` of that Module, so the guide's model and RNG counts
  stay as they were. The probe binds no name in the
  user namespace (the magics bind private names that are removed afterwards) and displays nothing
  as ``Out``. Both runs also get a first cell with stand-ins for plotting/typing modules the
  guide imports but this environment lacks (matplotlib, jaxtyping, tensorboardX).

The summary gives, per guide: probe cells added, nnx_lab failures (an exception from nnx_lab: the
first line; a one-line ``UsageError`` refusal is listed apart as "refused"), and every original cell
whose status or output differs between the two runs (an original cell that passed without nnx_lab
and fails with it is a failure too). ``--devices N`` runs the kernels with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (flax_gspmd.ipynb gets 8 unless given).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from nnx_lab.core.text import first_line, one_line

ROOT = Path(__file__).resolve().parent.parent
MARK = "NNX_LAB_GUIDES "  # the probe prints one JSON line per probe cell after this marker

# Cells blanked in both runs: they install packages, download data sets or need libraries that are
# not part of this environment (a guide's own dependency, not nnx_lab's).
SKIP = re.compile(
    r"^\s*[!%]\s*pip\b|tensorflow_datasets|\btfds\b|^\s*import tensorflow\b|^\s*from datasets\b|"
    r"torchvision|^\s*import grain\b|^\s*from grain\b|\bwget\b|\bcurl\b",
    re.M,
)

DEFAULT_DEVICES = {"flax_gspmd.ipynb": 8}

# Plotting and typing helpers some guides import beside their model code: when one is not
# installed, both runs get a stand-in (a MagicMock module), so the cell's model code still runs.
STUBS = ("matplotlib", "jaxtyping", "tensorboardX", "tensorboard")
PRELUDE = (
    "# added by tools/flax_guides.py to both runs: stand-ins for plotting/typing modules not installed\n"
    "__import__('sys').path.insert(0, {tools!r}); __import__('flax_guides').stub_missing({stubs!r})"
)


# --------------------------------------------------------------------------------------------
# The probe, run inside the kernel (this file is imported there: ``__import__('flax_guides')``).
# --------------------------------------------------------------------------------------------

_seen: dict[str, int] = {}  # user name -> id() of the object probed under that name
_viewers: dict[str, object] = {}  # user name -> the viewer kept for it (one per name)
_reported: set[int] = set()  # id() of viewers whose error status was already reported
_last_error = [id(None)]  # id() of sys.last_value at the previous probe


def _kind(obj):
    from flax import nnx

    if isinstance(obj, nnx.Module):
        return "Module"
    if isinstance(obj, nnx.Optimizer):
        return "Optimizer"
    if isinstance(obj, nnx.State):
        return "State"
    return None


def _arrays(obj):
    """The model's leaves (arrays) in order, to check that nnx_lab left them as they were."""
    import jax
    from flax import nnx

    try:
        state = obj if isinstance(obj, nnx.State) else nnx.state(obj)
        return jax.tree.leaves(state)
    except Exception:
        return None


def probe(shell, capture: bool = True) -> None:
    """Probe every new or rebound Module / Optimizer / State in ``shell.user_ns``; with ``capture``,
    also capture the previous cell's direct Module calls (see ``_capture_calls``)."""
    import traceback

    from IPython.core.error import UsageError

    import nnx_lab

    ns = shell.user_ns
    record = {"probed": [], "failures": [], "refused": []}

    def run(name, op, fn):
        try:
            return fn()
        except UsageError as e:
            record["refused"].append({"name": name, "op": op, "error": first_line(e)})
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the probe
            record["failures"].append({"name": name, "op": op, "error": one_line(e)})
            print(f"--- {op} on {name} failed ---", file=sys.stderr)
            traceback.print_exc()
        return None

    # Viewers kept from earlier probes refreshed after the last cell: an error status is a failure.
    for name, viewer in list(_viewers.items()):
        status = dict(getattr(viewer, "status", {}) or {})
        if status.get("state") == "error" and id(viewer) not in _reported:
            _reported.add(id(viewer))
            record["failures"].append(
                {"name": name, "op": "watch refresh", "error": first_line(status.get("message", status))}
            )

    candidates = []
    for name, obj in list(ns.items()):
        if name.startswith("_") or name in ("In", "Out", "exit", "quit", "get_ipython"):
            continue
        try:
            kind = _kind(obj)
        except Exception:
            kind = None
        if kind and _seen.get(name) != id(obj):
            candidates.append((name, obj, kind))

    nnx_text = "nnx"
    try:
        from flax import nnx as _nnx

        if ns.get("nnx") is not _nnx:
            nnx_text = "__import__('flax').nnx"
    except Exception:
        pass

    for name, obj, kind in candidates:
        _seen[name] = id(obj)
        record["probed"].append(f"{name}:{kind}")
        run(name, "snapshot", lambda: nnx_lab.snapshot(obj).to_text())

        before = _arrays(obj)
        keep = {k: ns[k] for k in ("_nl_g", "_nl_p", "_nl_r") if k in ns}
        body = "_nl_p = __import__('jax').tree.map(lambda x: x, _nl_p)\n_nl_r = __import__('jax').tree.map(lambda x: x, _nl_r)\n"
        run(
            name,
            "%%nnx_split",
            lambda: shell.run_cell_magic("nnx_split", f"{name} {nnx_text}.Param ... --as _nl_g,_nl_p,_nl_r", body),
        )
        for k in ("_nl_g", "_nl_p", "_nl_r"):
            ns.pop(k, None)
        ns.update(keep)
        after = _arrays(obj)
        if before is not None and (
            after is None or len(after) != len(before) or any(a is not b for a, b in zip(before, after))
        ):
            record["failures"].append(
                {
                    "name": name,
                    "op": "%%nnx_split",
                    "error": "the model's arrays changed after a body that leaves them as they were",
                }
            )

        def watch():
            old = _viewers.pop(name, None)
            if old is not None:
                old.close()
            viewer = nnx_lab.watch(obj, display=False)
            _viewers[name] = viewer
            status = dict(viewer.status)
            if status.get("state") == "error":
                _reported.add(id(viewer))
                raise RuntimeError(f"watch status error: {status.get('message')}")
            return status

        run(name, "watch", watch)
        if kind == "Module":
            run(name, "view_report", lambda: nnx_lab.view_report(obj).to_text())

    # A cell that raised (the guide's own failure on this flax) is not run again under a capture.
    last_error = id(getattr(sys, "last_value", None))
    if capture and last_error == _last_error[0]:
        _capture_calls(shell, record, run)
    _last_error[0] = last_error
    print(MARK + json.dumps(record))


def _module_calls(shell):
    """Top-level statements of the cell before the probe that call something with exactly one
    Module bound to a name and no other graph node (``y = model(x)``, ``model(x, mutable=True)``,
    ``nnx.capture(model, nnx.Intermediate)(x)``, ``train_step(model, x)``): (module name, call).
    A statement that also passes an Optimizer, State or another Module is left alone: running it
    on a clone would change those."""
    import ast

    from flax import nnx
    from flax.nnx import graph

    history = shell.user_ns.get("_ih") or []
    source = history[-2] if len(history) >= 2 else ""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        # Only a call of a name or of a call's result (model(x), train_step(model, x),
        # nnx.capture(model, ...)(x)), never obj.method(...): `checkpointer.save(path, nnx.state(model))`
        # run again would write the armed clone over the guide's own checkpoint.
        if not isinstance(value, ast.Call) or not isinstance(value.func, (ast.Name, ast.Call)):
            continue
        names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in shell.user_ns}
        modules = {n for n in names if isinstance(shell.user_ns[n], nnx.Module)}
        nodes = {n for n in names if graph.is_graph_node(shell.user_ns[n])}
        if len(modules) == 1 and nodes == modules:
            found.append((modules.pop(), value))
    return found


def _capture_calls(shell, record, run) -> None:
    """Re-run the previous cell's first call of each Module (see ``_module_calls``) under
    ``%%nnx_capture`` on an ``nnx.clone`` of it (the guide's own model, RNG counts and names stay
    as they were)."""
    import ast

    from flax import nnx

    ns = shell.user_ns
    done = set()
    for name, call in _module_calls(shell):
        if name in done:
            continue
        done.add(name)
        try:
            clone = nnx.clone(ns[name])
        except Exception:  # noqa: BLE001 - a model flax cannot clone is not probed this way
            continue
        call = copy.deepcopy(call)
        for node in ast.walk(call):
            if isinstance(node, ast.Name) and node.id == name:
                node.id = "_nl_m"
        body = f"_nl_out = {ast.unparse(call)}\n"
        keep = {k: ns[k] for k in ("_nl_m", "_nl_out", "_nl_cap") if k in ns}
        ns["_nl_m"] = clone
        record.setdefault("captured", [])
        try:

            def capture():
                shell.run_cell_magic("nnx_capture", "_nl_m --as _nl_cap", body)
                captured = ns.get("_nl_cap")
                if not isinstance(captured, nnx.State):
                    raise RuntimeError(f"%%nnx_capture bound a {type(captured).__name__}, not an nnx.State")
                record["captured"].append(f"{name}: {len(jax_leaves(captured))} arrays")

            run(name, "%%nnx_capture", capture)
        finally:
            for k in ("_nl_m", "_nl_out", "_nl_cap"):
                ns.pop(k, None)
            ns.update(keep)


def jax_leaves(tree):
    import jax

    return jax.tree.leaves(tree)


def stub_missing(names) -> None:
    """Put a MagicMock module in ``sys.modules`` for each of ``names`` that cannot be imported."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    from unittest import mock

    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if not missing:
        return

    class Loader(importlib.abc.Loader):
        def create_module(self, spec):
            module = mock.MagicMock(name=spec.name)
            module.__spec__, module.__path__, module.__name__ = spec, [], spec.name
            return module

        def exec_module(self, module):
            pass

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname.split(".")[0] in missing:
                return importlib.machinery.ModuleSpec(fullname, Loader(), is_package=True)
            return None

    sys.meta_path.append(Finder())


def install(shell) -> None:
    """The setup cell's work: nothing to do beyond importing this module in the kernel."""
    _seen.clear()
    _viewers.clear()
    _last_error[0] = id(getattr(sys, "last_value", None))


# --------------------------------------------------------------------------------------------
# The driver: build both notebooks, execute them, compare.
# --------------------------------------------------------------------------------------------


def _blank_skipped(nb) -> list[int]:
    skipped = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and SKIP.search(cell.source):
            skipped.append(i)
            cell.source = "# skipped by tools/flax_guides.py (network, data set or a library not installed)\npass"
    return skipped


def _add_prelude(nb) -> None:
    """Stand-ins only for modules the guide itself imports: a stand-in seen by a library that
    looks for the real one (jax's sharding display looks for matplotlib) would break it."""
    import nbformat

    tools = str(Path(__file__).resolve().parent)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    stubs = tuple(m for m in STUBS if re.search(rf"^\s*(import|from)\s+{m}\b", source, re.M))
    cell = nbformat.v4.new_code_cell(PRELUDE.format(tools=tools, stubs=stubs))
    cell.metadata["nnx_lab_guides"] = "prelude"
    nb.cells.insert(0, cell)


def _instrument(nb):
    """Insert the setup cell and a probe cell after every code cell; return (notebook, index map)."""
    import nbformat

    tools = str(Path(__file__).resolve().parent)
    setup = nbformat.v4.new_code_cell(
        f"%load_ext nnx_lab\n__import__('sys').path.insert(0, {tools!r}); __import__('flax_guides').install(get_ipython())"
    )
    setup.metadata["nnx_lab_guides"] = "setup"
    cells = [nb.cells[0], setup]  # the prelude first, as in the baseline
    origin = []  # for each original code cell: its index in the instrumented notebook
    for cell in nb.cells[1:]:
        cells.append(cell)
        if cell.cell_type == "code":
            origin.append(len(cells) - 1)
            probe_cell = nbformat.v4.new_code_cell("__import__('flax_guides').probe(get_ipython())")
            probe_cell.metadata["nnx_lab_guides"] = "probe"
            cells.append(probe_cell)
    out = copy.deepcopy(nb)
    out.cells = cells
    return out, origin


def _execute(nb, timeout: int, env: dict, cwd: str):
    from nbclient import NotebookClient

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    # A cell past its timeout is interrupted and recorded as an error; the run goes on.
    client = NotebookClient(
        nb,
        timeout=timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        kernel_name="python3",
        resources={"metadata": {"path": cwd}},
    )
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb


_NOISE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"\b\d+(\.\d+)?\s*(ns|µs|us|ms|s|sec|seconds)\b"), "T"),
    (re.compile(r"/tmp/[^\s'\"]+"), "/tmp/…"),
    (re.compile(r"id='\d+'"), "id=…"),
    (re.compile(r"\x1b\[[0-9;]*m"), ""),
]


def _cell_result(cell) -> tuple[str, str, str]:
    """(status, error line, normalised text of the outputs)."""
    status, err, texts, streams = "ok", "", [], {"stdout": "", "stderr": ""}
    for out in cell.get("outputs", []):
        if out.output_type == "error":
            status, err = "error", f"{out.ename}: {first_line(out.evalue)}"
        elif out.output_type == "stream":  # stdout and stderr apart: their interleaving is not stable
            streams[out.name] = streams.get(out.name, "") + out.text
        elif out.output_type in ("execute_result", "display_data"):
            data = out.get("data", {})
            texts.append(data.get("text/plain", "") if "text/html" not in data or "text/plain" in data else "<html>")
    text = streams["stdout"] + "".join(texts) + streams["stderr"]
    for pattern, repl in _NOISE:
        text = pattern.sub(repl, text)
    return status, err, text


def _probe_record(cell) -> dict:
    for out in cell.get("outputs", []):
        if out.output_type == "stream" and out.name == "stdout":
            for line in out.text.splitlines():
                if line.startswith(MARK):
                    return json.loads(line[len(MARK) :])
    return {}


def run_guide(path: Path, timeout: int, devices: int | None, out_dir: Path | None) -> dict:
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    skipped = _blank_skipped(nb)
    _add_prelude(nb)
    instrumented, origin = _instrument(nb)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["PYTHONHASHSEED"] = "0"  # set order in messages the same in both runs
    devices = devices if devices is not None else DEFAULT_DEVICES.get(path.name)
    if devices:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()

    result = {
        "guide": path.name,
        "skipped_cells": skipped,
        "probe_cells": len(origin) + 1,
        "failures": [],
        "refused": [],
        "changed": [],
        "baseline_errors": 0,
    }
    with tempfile.TemporaryDirectory() as work:
        start = time.time()
        base = _execute(copy.deepcopy(nb), timeout, env, work)
        with tempfile.TemporaryDirectory() as work2:
            inst = _execute(instrumented, timeout, env, work2)
        result["seconds"] = round(time.time() - start, 1)
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(base, str(out_dir / f"{path.stem}.baseline.ipynb"))
        nbformat.write(inst, str(out_dir / f"{path.stem}.nnx_lab.ipynb"))

    setup_status, setup_err, _ = _cell_result(inst.cells[1])
    if setup_status != "ok":
        result["failures"].append({"cell": 0, "op": "setup", "error": setup_err})
    code_cells = [c for c in base.cells[1:] if c.cell_type == "code"]
    for n, (bcell, at) in enumerate(zip(code_cells, origin)):
        b_status, b_err, b_text = _cell_result(bcell)
        i_status, i_err, i_text = _cell_result(inst.cells[at])
        result["baseline_errors"] += b_status == "error"
        if (b_status, b_err) != (i_status, i_err):
            kind = "failure" if b_status == "ok" else "changed"
            entry = {"cell": n, "baseline": b_err or "ok", "nnx_lab": i_err or "ok"}
            (result["failures"] if kind == "failure" else result["changed"]).append({**entry, "op": "original cell"})
        elif b_text != i_text:
            result["changed"].append(
                {"cell": n, "op": "original output", "baseline": b_text[:200], "nnx_lab": i_text[:200]}
            )
        probe_cell = inst.cells[at + 1]
        p_status, p_err, _ = _cell_result(probe_cell)
        record = _probe_record(probe_cell)
        if p_status == "error" and not record:
            result["failures"].append({"cell": n, "op": "probe", "error": p_err})
        for f in record.get("failures", []):
            result["failures"].append({"cell": n, **f})
        for f in record.get("refused", []):
            result["refused"].append({"cell": n, **f})
        result.setdefault("probed", []).extend(record.get("probed", []))
    return result


def summary(results: list[dict]) -> str:
    lines = [
        f"{'guide':34} {'cells added':>11} {'probed':>6} {'guide errors':>12} {'nnx_lab failures':>16} "
        f"{'refused':>7} {'outputs changed':>15}"
    ]
    for r in results:
        lines.append(
            f"{r['guide']:34} {r['probe_cells']:>11} {len(r.get('probed', [])):>6} {r['baseline_errors']:>12} "
            f"{len(r['failures']):>16} {len(r['refused']):>7} {len(r['changed']):>15}"
        )
    for r in results:
        for f in r["failures"]:
            what = f.get("error") or f"{f.get('baseline')} -> {f.get('nnx_lab')}"
            lines.append(f"  FAIL {r['guide']} cell {f['cell']} {f.get('op')} {f.get('name', '')}: {what}")
        for f in r["refused"]:
            lines.append(f"  refused {r['guide']} cell {f['cell']} {f['op']} {f['name']}: {f['error']}")
        for f in r["changed"]:
            lines.append(
                f"  changed {r['guide']} cell {f['cell']} {f['op']}: {f.get('baseline')!r} -> {f.get('nnx_lab')!r}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--devices", type=int, default=None, help="XLA host platform device count")
    parser.add_argument("--out", type=Path, default=None, help="write both executed notebooks here")
    parser.add_argument("--json", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    results = []
    for path in args.notebooks:
        print(f"running {path} ...", file=sys.stderr, flush=True)
        try:
            results.append(run_guide(path, args.timeout, args.devices, args.out))
        except Exception as e:  # noqa: BLE001 - the tool's own trouble with one guide; the others still run
            results.append(
                {
                    "guide": path.name,
                    "skipped_cells": [],
                    "probe_cells": 0,
                    "baseline_errors": 0,
                    "failures": [{"cell": "-", "op": "run", "error": one_line(e)}],
                    "refused": [],
                    "changed": [],
                }
            )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    print(summary(results))
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
