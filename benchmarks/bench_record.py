"""Record overhead: what ``@rewind.llm`` adds to a call while recording.

    python benchmarks/bench_record.py [--calls N] [--rounds R]

5,000 decorator-captured chat calls, each carrying ~4 KB of chat history (a system
prompt and a sliding window over a growing conversation; ~22 MB of trace). The model
answers instantly, so the difference between the decorated call inside
``rewind.record()`` and the same undecorated function is rewind's whole cost:
binding and canonicalizing the request, the fingerprint, the OpenTelemetry span,
serializing the event and writing + flushing its line.

Target: at most 150 µs per call over the undecorated function. Floors printed beside
it: the raw floor of the trace it wrote (reading the file and ``json.loads`` of every
line), per line; the undecorated call itself; and one bare OpenTelemetry span with
comparable attributes (the design records one span per call, so no call can cost less).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as c
import _workload as w

import rewind

TARGET_US = 150.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    requests = w.chat_requests(args.calls)
    recorded = rewind.llm(w.chat)
    report = c.Reporter("record", f"record overhead: {args.calls:,} decorated chat calls")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"

        def plain() -> float:
            w.reset_chat()
            start = time.process_time()
            for request in requests:
                w.chat(**request)
            return time.process_time() - start

        def recording() -> float:
            w.reset_chat()
            start = time.process_time()
            with rewind.record(path):
                for request in requests:
                    recorded(**request)
            return time.process_time() - start

        recording()  # warm up: imports, the tracer provider
        plain_s, record_s = c.best_of(args.rounds, plain, recording)
        parse_s, span_s = c.best_of(args.rounds, c.read_and_parse(path), c.bare_spans(args.calls))
        size = path.stat().st_size

    per_call = 1e6 / args.calls
    overhead = (record_s - plain_s) * per_call
    report.add(
        c.Result(
            "record",
            "record overhead per call",
            overhead,
            "us",
            floor=parse_s * per_call,
            floor_name="read + json.loads, per line",
            target=TARGET_US,
            goal="max",
        )
    )
    report.add(c.Result("record", "undecorated call", plain_s * per_call, "us"))
    report.add(c.Result("record", "a bare OpenTelemetry span (design floor)", span_s * per_call, "us"))
    report.add(c.Result("record", "recorded call (whole)", record_s * per_call, "us"))
    report.add(c.Result("record", "trace written", size, "B", note=f"{size / args.calls:,.0f} B per event"))
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
