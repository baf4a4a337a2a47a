"""Opening and loading a long trace: ``Trace.open`` (lazy) and ``Trace.load`` (eager).

    python benchmarks/bench_trace_io.py [--calls N] [--rounds R]

On the 5,000-event, ~22 MB trace of the standard long run (recorded first, through
the decorator). ``Trace.open`` is what replay, fork and the CLI use: it keeps a small
skeleton per event and reads bodies on demand. ``Trace.load`` parses every body.

Targets: ``Trace.open`` within 1.2x of just reading the file and splitting its lines;
``Trace.load`` within 1.2x of reading the file and ``orjson.loads`` of every line,
keeping the values (the floor for a Python reader that builds the same values), and
within 1.5x of the stdlib floor (``json.loads`` of every line). The memory an open
trace keeps per event is reported too, and how it
scales (``--scaling``, default 10k, 100k and 1M steps of small tool calls, each opened
in a fresh process: resident memory after ``Trace.open`` minus before, per event). It
must not grow faster than linearly: bytes per event at the largest size may exceed
those at the smallest by at most 25%.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import _common as c
import _workload as w

from rewind.storage.trace import Trace

OPEN_TARGET = 1.2
LOAD_TARGET = 1.5
LOAD_ORJSON_TARGET = 1.2
#: Bytes per event at the largest size over bytes per event at the smallest.
SCALING_TARGET = 1.25


def timed(fn: object, path: Path) -> c.Callable[[], float]:
    def measure() -> float:
        start = time.process_time()
        result = fn(path)  # type: ignore[operator]
        elapsed = time.process_time() - start
        del result  # freeing what was read is not part of reading it
        return elapsed

    return measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--scaling", default="10000,100000,1000000", help="step counts for the memory scaling check ('' skips it)"
    )
    args = parser.parse_args(argv)

    report = c.Reporter("trace_io", f"Trace.open / Trace.load of a {args.calls:,}-event trace")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        w.record_chat_run(path, w.chat_requests(args.calls))
        size = path.stat().st_size
        split_s, open_s = c.best_of(args.rounds, c.read_and_split(path), timed(Trace.open, path))
        parse_s, orjson_s, paused_s, load_s = c.best_of(
            max(2, args.rounds // 2),
            c.read_and_parse(path),
            c.read_and_orjson(path),
            c.read_and_orjson(path, gc_paused=True),
            timed(Trace.load, path),
        )
        gc.collect()
        tracemalloc.start()
        trace = Trace.open(path)
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        events = len(trace)
        del trace

    report.add(
        c.Result(
            "trace_io",
            f"Trace.open ({c.fmt(size, 'B')}, lazy)",
            open_s,
            "s",
            floor=split_s,
            floor_name="read + split lines",
            target=OPEN_TARGET,
            goal="max",
            target_on="ratio",
        )
    )
    report.add(
        c.Result(
            "trace_io",
            "Trace.load (eager)",
            load_s,
            "s",
            floor=parse_s,
            floor_name="read + json.loads every line",
            target=LOAD_TARGET,
            goal="max",
            target_on="ratio",
        )
    )
    report.add(
        c.Result(
            "trace_io",
            "Trace.load (eager), parser floor",
            load_s,
            "s",
            floor=orjson_s,
            floor_name="read + orjson.loads every line",
            target=LOAD_ORJSON_TARGET,
            goal="max",
            target_on="ratio",
        )
    )
    report.add(
        c.Result(
            "trace_io",
            "Trace.load (eager), collector paused floor",
            load_s,
            "s",
            floor=paused_s,
            floor_name="the same orjson floor, collector paused as Trace.load pauses it",
            floor_label="reference",
            target_on="ratio",
        )
    )
    report.add(c.Result("trace_io", "memory an open trace keeps per event", held / events, "B"))
    if args.scaling:
        scaling(report, [int(n) for n in args.scaling.split(",")])
    return report.exit_code()


def write_small_trace(path: Path, steps: int) -> None:
    """``steps`` small tool calls in the writer's own layout (Event.to_line), written in bulk."""
    import json

    from rewind.data.canonical import request_text, text_fingerprint
    from rewind.storage.trace import Event, new_header

    with open(path, "wb", buffering=1 << 20) as fh:
        fh.write(json.dumps(new_header(), separators=(",", ":")).encode() + b"\n")
        for seq in range(steps):
            request = {"query": f"weather in city {seq % 997}", "units": "metric"}
            text = request_text(request)
            assert text is not None
            event = Event(
                seq, "tool", "search", text_fingerprint(text), None, {"temp": seq % 40, "sky": "clear"},
                ts=1_700_000_000.0 + seq, duration_ms=1.5, request_text=text,
            )
            fh.write(event.to_line() + b"\n")


_MEASURE_OPEN = """
import gc, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
from rewind.trace import Trace
gc.collect(); before = rss()
trace = Trace.open(sys.argv[1])
gc.collect(); print(rss() - before, len(trace))
"""


def scaling(report: c.Reporter, sizes: list[int]) -> None:
    per_event: list[float] = []
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        for steps in sizes:
            path = Path(tmp) / f"small-{steps}.rewind"
            write_small_trace(path, steps)
            out = subprocess.run(
                [sys.executable, "-c", _MEASURE_OPEN, str(path)], capture_output=True, text=True, check=True
            )
            held, events = (int(x) for x in out.stdout.split())
            assert events == steps
            per_event.append(held / steps)
            report.add(
                c.Result(
                    "trace_io",
                    f"open trace, {steps:,} steps: RSS per event",
                    held / steps,
                    "B",
                    note=f"{c.fmt(path.stat().st_size, 'B')} file, {c.fmt(held, 'B')} resident",
                )
            )
            path.unlink()
    report.add(
        c.Result(
            "trace_io",
            f"bytes/event at {sizes[-1]:,} over {sizes[0]:,} steps",
            per_event[-1],
            "B",
            floor=per_event[0],
            floor_name=f"bytes/event at {sizes[0]:,} steps",
            floor_label="reference",
            target=SCALING_TARGET,
            goal="max",
            target_on="ratio",
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
