"""Client-side failures: every one is a TraceAllocError (a reply that is not JSON, a service that
stops answering, a payload that is not bytes), and numpy scalars are numbers."""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest

import trace_alloc
from trace_alloc import TraceAllocError

TREE = [{"embedding": [1, 0]}, {"parent": 0, "embedding": [1, 0.01], "visits": 2, "reward": 1},
        {"parent": 0, "embedding": [0, 1], "visits": 1}]


def fake_service(tmp_path, reply: bytes):
    """A stand-in for the service that answers every line with `reply` (raw bytes and a newline)."""
    script = tmp_path / "fake_service.py"
    script.write_text("import sys\nfor line in sys.stdin:\n    sys.stdout.buffer.write(%r + b'\\n')\n    sys.stdout.flush()\n" % reply)
    return trace_alloc.Service([sys.executable, str(script)], timeout=30)


@pytest.mark.parametrize("reply", [b"this is not json", b'{"id": 1, "ok": true, "result": "\xff"}', b"[1, 2]", b'{"id": 1, "ok": true}',
                                   b'{"id": 1, "ok": false, "error": 7}'])
def test_a_reply_the_client_cannot_read_is_a_trace_alloc_error(tmp_path, reply):
    with fake_service(tmp_path, reply) as s:
        with pytest.raises(TraceAllocError) as info:
            s.stats()
        assert info.value.code == "service_error"


def test_a_stopped_service_times_out_with_code_timeout(command):
    assert trace_alloc.DEFAULT_TIMEOUT == trace_alloc.Service.__init__.__kwdefaults__["timeout"]
    # The service starts and answers its first request under the default timeout (a loaded CI
    # machine can take more than 2 s to start Node); the 2 s apply to the request it cannot answer.
    s = trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"])
    try:
        s.add_tree("a", TREE)
        s.timeout = 2
        os.kill(s._proc.pid, signal.SIGSTOP)  # alive, but answers nothing
        started = time.monotonic()
        with pytest.raises(TraceAllocError) as info:
            s.stats()
        assert info.value.code == "timeout"
        assert "no reply within 2 s" in info.value.message
        assert time.monotonic() - started < 30
        with pytest.raises(TraceAllocError):  # it was stopped: later requests fail at once, never hang
            s.plan(budget=4)
    finally:
        s.close()


def test_a_binary_request_times_out_while_sending(command):
    s = trace_alloc.Service(command + ["serve", "--stdio", "--backend", "cpu"])
    try:
        s.stats()
        s.timeout = 2  # after start-up, which may take longer on a loaded machine
        os.kill(s._proc.pid, signal.SIGSTOP)
        with pytest.raises(TraceAllocError) as info:
            s.request_binary("add-columns", np.zeros(64 << 20, dtype=np.uint8))  # far more than a pipe holds
        assert info.value.code == "timeout"
    finally:
        s.close()


def test_numpy_scalars_are_numbers(service):
    nodes = [{"embedding": np.array([1.0, 0.0])},
             {"parent": np.int64(0), "embedding": np.array([1, 0.01], dtype=np.float32), "visits": np.int64(2), "reward": np.float32(1)},
             {"parent": np.int32(0), "embedding": [np.float64(0), np.float64(1)], "visits": np.uint8(1), "terminal": np.bool_(False)}]
    service.add_tree("a", nodes)
    assert sum(a.branches for a in service.plan(budget=np.int64(8)).tree("a").allocations) == 8
    assert service.update("a", np.int64(1), reward=np.float64(0.25), visits=np.int32(3), terminal=np.bool_(False)) == {"updated": 1}
    plan = service.plan(total_budget=np.int64(10), min_per_tree=np.int32(1), prune_ratio=np.float32(0.5))
    assert plan.total_budget == 10
    with pytest.raises(TraceAllocError) as info:
        service.update("a", 1, reward=np.float32("nan"))
    assert (info.value.code, info.value.field) == ("invalid_value", "reward")


def test_every_client_side_failure_is_a_trace_alloc_error(service):
    with pytest.raises(TraceAllocError) as info:
        service.request_binary("add-columns", object())
    assert info.value.code == "invalid_request"
    with pytest.raises(TraceAllocError) as info:
        service.plan(budget=object())
    assert info.value.code == "invalid_request"
    service.close()
    with pytest.raises(TraceAllocError) as info:
        service.stats()
    assert info.value.code == "service_error"
