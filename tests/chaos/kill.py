"""SIGKILL during record, at random points: every call the agent saw return is on disk, and
no torn line is ever served.

A forked child records decorated calls in a loop and, after each call returns, writes its
step number to a pipe (what the agent "acknowledged"). The parent kills it at a random
moment, then reads the trace every way there is (``Trace.open``, ``Trace.load``) and
replays it strictly: each acknowledged step must be there with its response, and the
replay must serve exactly the complete lines (a torn tail is never an event).
"""

from __future__ import annotations

import os
import random
import select
import signal
import time
from pathlib import Path
from typing import Any

import rewind
from rewind.errors import RewindError

KILLS = 32
PAYLOAD = "x" * 3000  # big enough that a kill often lands mid-write


@rewind.tool(name="step")
def step(n: int) -> dict[str, Any]:
    return {"n": n, "payload": PAYLOAD[: 100 + (n * 37) % 2900]}


def _child(path: Path, ack: int) -> None:
    try:
        with rewind.record(path):
            n = 0
            while True:
                step(n)
                os.write(ack, f"{n}\n".encode())
                n += 1
    finally:
        os._exit(0)


def _acknowledged(read_end: int) -> list[int]:
    data = b""
    while select.select([read_end], [], [], 0)[0]:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        data += chunk
    return [int(x) for x in data.split(b"\n") if x]


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    lost = torn_served = unreadable = torn_tails = acknowledged = 0
    for kill in range(KILLS):
        path = work / f"kill{kill}.rewind"
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(path, write_end)
        os.close(write_end)
        time.sleep(rng.uniform(0.02, 0.4))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        acked = _acknowledged(read_end)
        os.close(read_end)
        acknowledged += len(acked)
        try:
            lazy, eager = rewind.Trace.open(path), rewind.Trace.load(path)
        except (RewindError, OSError):
            unreadable += 1
            continue
        torn_tails += lazy.torn_tail
        recorded = {e.seq: e.response for e in eager.events}
        lost += sum(1 for n in acked if recorded.get(n) != step.__wrapped__(n))
        if [e.seq for e in lazy.events] != sorted(recorded):
            unreadable += 1
        # A strict replay serves every complete line and nothing more.
        served = 0
        try:
            with rewind.replay(path):
                for n in range(len(recorded) + 1):
                    if step(n) != step.__wrapped__(n):
                        torn_served += 1
                    served += 1
        except rewind.DivergenceError:
            pass  # the call past the last complete line
        except RewindError:
            unreadable += 1
        torn_served += max(0, served - len(recorded))
    return {
        "kills": KILLS,
        "acknowledged_calls": acknowledged,
        "acknowledged_lost": lost,
        "torn_tails_seen": torn_tails,
        "torn_lines_served": torn_served,
        "unreadable_traces": unreadable,
    }
