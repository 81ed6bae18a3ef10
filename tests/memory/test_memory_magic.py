"""%nnx_memory prints the ledger (restricted to names, a device, the top K); after a cell fails with
XLA's RESOURCE_EXHAUSTED the post-run hook prints the biggest holders once, and costs nothing otherwise."""

import jax.numpy as jnp
import pytest
from flax import nnx


def run(ip, capsys, code):
    capsys.readouterr()
    result = ip.run_cell(code)
    return result, capsys.readouterr().out


@pytest.fixture
def holders(ip):
    ip.user_ns["model"] = nnx.Linear(64, 64, rngs=nnx.Rngs(0))
    ip.user_ns["grads_old"] = {"w": jnp.ones((256, 256))}
    ip.user_ns["small"] = jnp.ones((3,))
    return ip


def test_the_magic_prints_the_ledger(holders, capsys):
    result, out = run(holders, capsys, "%nnx_memory")
    assert result.success, result.error_in_exec
    assert "grads_old" in out and "model" in out and "Param" in out
    assert "del grads_old" in out and "returns 256.0 KiB" in out


def test_the_magic_shows_only_the_named_holders_and_top(holders, capsys):
    _, out = run(holders, capsys, "%nnx_memory model")
    assert "model" in out and "grads_old " not in out.split("What to free")[0]
    _, out = run(holders, capsys, "%nnx_memory --top 1")
    assert "grads_old" in out and "small " not in out and "not shown" in out
    _, out = run(holders, capsys, "%nnx_memory --device 0")
    assert "cpu:0" in out


def test_the_magic_refuses_bad_lines_in_one_line(holders, capsys):
    for line, message in (
        ("%nnx_memory nobody", "nobody holds no live array"),
        ("%nnx_memory --device 99", "--device 99: no live array is on that device"),
        ("%nnx_memory --top 0", "--top"),
    ):
        capsys.readouterr()
        holders.run_cell(line)
        captured = capsys.readouterr()
        text = captured.out + captured.err
        assert message in text and "Traceback" not in text, text


def test_an_out_of_memory_cell_prints_the_holders_once_under_the_traceback(holders, capsys):
    holders.user_ns["alias"] = holders.user_ns["small"]
    code = "raise RuntimeError('RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.')"
    result, out = run(holders, capsys, code)
    assert not result.success
    assert out.count("nnx_lab: the device ran out of memory") == 1
    assert "grads_old: 256.0 KiB" in out and "del grads_old" in out
    assert ": 0 B" not in out  # a holder sharing all its buffers is not listed with nothing
    assert out.index("RESOURCE_EXHAUSTED") < out.index("nnx_lab: the device ran out of memory")  # under it


def test_a_jax_xla_runtime_error_of_that_kind_counts(holders, capsys):
    class XlaRuntimeError(RuntimeError):
        pass

    holders.user_ns["XlaRuntimeError"] = XlaRuntimeError
    _, out = run(holders, capsys, "raise XlaRuntimeError('RESOURCE_EXHAUSTED: Failed to allocate request for 4.0GiB')")
    assert "nnx_lab: the device ran out of memory" in out


def test_other_errors_and_successful_cells_print_nothing(holders, capsys):
    _, out = run(holders, capsys, "raise ValueError('bad shape')")
    assert "nnx_lab" not in out
    _, out = run(holders, capsys, "1 + 1")
    assert "nnx_lab" not in out


def test_the_hook_builds_no_ledger_for_a_cell_that_did_not_run_out_of_memory(ip, monkeypatch, capsys):
    # Its cost on ordinary cells (<= 1 ms, benchmarks/bench_memory.py) rests on this: only the error
    # object is looked at (its type's name, then at most 2,000 characters of its text).
    import nnx_lab.core.memory as core_memory

    built = []

    class Ledger:
        def top_text(self, n):
            return "LEDGER"

    monkeypatch.setattr(core_memory, "memory", lambda: built.append(1) or Ledger())  # what the hook prints

    class Result:
        error_in_exec = None

    class Failed:
        error_in_exec = ValueError("x" * 10_000 + " RESOURCE_EXHAUSTED")  # past what is read of it

    class OutOfMemory:
        error_in_exec = RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 2.00GiB")

    for result in (Result(), Failed()):
        ip.events.trigger("post_run_cell", result)  # as IPython does after each cell
    assert built == []
    ip.events.trigger("post_run_cell", OutOfMemory())
    assert built == [1] and "LEDGER" in capsys.readouterr().out
