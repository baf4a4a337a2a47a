"""Two processes on one trace: a second recorder is refused and the first recording stays
whole, while a third process reads the trace over and over as it grows.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import rewind
from rewind.errors import RewindError

FIRST = """
import sys, time, rewind
@rewind.tool(name="tick")
def tick(n):
    return {"n": n, "pad": "p" * (n % 700)}
with rewind.record(sys.argv[1]):
    print("open", flush=True)
    for n in range(400):
        tick(n)
        time.sleep(0.004)
print("done 400", flush=True)
"""

SECOND = """
import sys, rewind
@rewind.tool(name="intruder")
def intruder():
    return 1
try:
    with rewind.record(sys.argv[1]):
        intruder()
except rewind.TraceLockedError as exc:
    print("refused:", exc)
    sys.exit(3)
"""


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    path = work / "shared.rewind"
    first = subprocess.Popen([sys.executable, "-c", FIRST, str(path)], stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "open"
    second = subprocess.run([sys.executable, "-c", SECOND, str(path)], capture_output=True, text=True, timeout=60)
    reads = reader_errors = 0
    grown: list[int] = []
    while first.poll() is None:
        try:
            trace = rewind.Trace.open(path) if reads % 2 else rewind.Trace.load(path)
            for event in trace.events[-5:]:
                event.response  # noqa: B018 - a body read while the file grows
            grown.append(len(trace.events))
        except RewindError:
            reader_errors += 1
        reads += 1
        time.sleep(rng.uniform(0, 0.01))
    finished = first.stdout.read()
    first.wait()
    final = rewind.Trace.load(path)
    intact = (
        first.returncode == 0
        and "done 400" in finished
        and [e.seq for e in final.events] == list(range(400))
        and all(e.name == "tick" for e in final.events)
    )
    return {
        "second_recorder_refused": int(second.returncode == 3 and "refused:" in second.stdout),
        "first_recording_intact": int(intact),
        "concurrent_reads": reads,
        "reader_errors": reader_errors,
        "reads_never_shrank": int(grown == sorted(grown)),
    }
