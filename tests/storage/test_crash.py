"""A recording process killed with SIGKILL leaves a trace with every completed call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rewind
from rewind.storage.trace import Trace

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

SELF_KILL = """
import os, signal, sys
import rewind

@rewind.tool
def step(i):
    return {"i": i, "payload": "p" * 2000}

with rewind.record(sys.argv[1]):
    for i in range(25):
        step(i)
    os.kill(os.getpid(), signal.SIGKILL)
"""

KILLED_FROM_OUTSIDE = """
import sys, time
import rewind

@rewind.tool
def step(i):
    return {"i": i, "payload": "q" * 50_000}

with rewind.record(sys.argv[1]):
    i = 0
    while True:
        step(i)
        i += 1
        if i == 5:
            print("ready", flush=True)
"""


def test_sigkill_after_calls_keeps_every_completed_call(trace_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", SELF_KILL, str(trace_path)], capture_output=True, timeout=60)
    assert result.returncode == -signal.SIGKILL
    trace = Trace.load(trace_path)
    assert [e.request["i"] for e in trace] == list(range(25))


def test_sigkill_mid_write_leaves_a_loadable_trace_that_replays(trace_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_FROM_OUTSIDE, str(trace_path)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    for opener in (Trace.load, Trace.open):
        trace = opener(trace_path)
        assert len(trace) >= 5
        assert [e.request["i"] for e in trace] == list(range(len(trace)))
        assert all(e.response["payload"] == "q" * 50_000 for e in trace)

    @rewind.tool(name="step")
    def step(i: int) -> dict:
        raise AssertionError("replay must not run the live function")

    count = len(Trace.load(trace_path))
    with rewind.replay(trace_path) as session:
        for i in range(count):
            assert step(i)["i"] == i
    assert session.cursor == count
