"""Widget messages queued while a cell runs: one that fails is logged, and the others still run."""

import logging

from nnx_lab._ipython import busy_queue


def test_a_failing_queued_message_is_logged_and_the_others_run(caplog):
    ran = []

    def broken():
        raise ValueError("a broken handler")

    busy_queue.post(lambda: ran.append(1))
    busy_queue.post(broken)
    busy_queue.post(lambda: ran.append(3))
    with caplog.at_level(logging.WARNING, logger="nnx_lab"):
        assert busy_queue.drain() == 3
    assert ran == [1, 3]
    [record] = [r for r in caplog.records if r.name == "nnx_lab"]
    assert "queued while a cell ran failed" in record.getMessage()
    assert record.exc_info[0] is ValueError
    assert busy_queue.pending() == 0
