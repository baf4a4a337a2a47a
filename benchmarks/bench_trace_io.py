"""Opening and loading a long trace: ``Trace.open`` (lazy) and ``Trace.load`` (eager).

    python benchmarks/bench_trace_io.py [--calls N] [--rounds R]

On the 5,000-event, ~22 MB trace of the standard long run (recorded first, through
the decorator). ``Trace.open`` is what replay, fork and the CLI use: it keeps a small
skeleton per event and reads bodies on demand. ``Trace.load`` parses every body.

Targets: ``Trace.open`` within 1.5x of just reading the file and splitting its lines.
``Trace.load`` is reported against the raw floor (reading the file and ``json.loads``
of every line). The memory an open trace keeps per event is reported too.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

import _common as c
import _workload as w

from rewind.trace import Trace

OPEN_TARGET = 1.5


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
    args = parser.parse_args(argv)

    report = c.Reporter("trace_io", f"Trace.open / Trace.load of a {args.calls:,}-event trace")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        w.record_chat_run(path, w.chat_requests(args.calls))
        size = path.stat().st_size
        split_s, open_s = c.best_of(args.rounds, c.read_and_split(path), timed(Trace.open, path))
        parse_s, load_s = c.best_of(max(2, args.rounds // 2), c.read_and_parse(path), timed(Trace.load, path))
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
            note=f"{load_s / parse_s:.2f}x the floor",
        )
    )
    report.add(c.Result("trace_io", "memory an open trace keeps per event", held / events, "B"))
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
