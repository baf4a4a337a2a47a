"""Record overhead: what ``@rewind.llm`` adds to a call while recording.

    python benchmarks/bench_record.py [--calls N] [--rounds R]

5,000 decorator-captured chat calls, each carrying ~4 KB of chat history (a system
prompt and a sliding window over a growing conversation; ~22 MB of trace). The model
answers instantly, so the difference between the decorated call inside
``rewind.record()`` and the same undecorated function is rewind's whole cost:
binding and canonicalizing the request, the fingerprint, the OpenTelemetry span,
serializing the event and writing + flushing its line.

Targets, per call over the undecorated function:

- nothing observing the spans (no OpenTelemetry configured, rewind's private provider):
  at most 80 µs. Floors printed beside it: the raw floor of the trace it wrote (reading
  the file and ``json.loads`` of every line), per line; the undecorated call itself;
  one bare OpenTelemetry span with comparable attributes.
- observed (``--observed``, run by ``main`` in a process of its own): an application
  ``TracerProvider`` with a ``BatchSpanProcessor`` to an in-memory exporter, so every
  call is a full GenAI span and the trace file is written by rewind's span exporter:
  at most 150 µs, beside a bare SDK span carrying the same attributes on the same
  provider (exported the same way).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c
import _workload as w

import rewind

TARGET_US = 80.0
OBSERVED_TARGET_US = 150.0


def timed_runs(
    requests: list[dict[str, Any]],
    path: Path,
    *,
    before: Callable[[], object] = lambda: None,
    after: Callable[[], object] = lambda: None,
) -> tuple[Callable[[], float], Callable[[], float]]:
    """The undecorated loop over ``requests`` and the decorated one recording to ``path``,
    each returning its CPU seconds (``before``/``after`` run inside the recorded timing)."""
    recorded = rewind.llm(w.chat)

    def plain() -> float:
        w.reset_chat()
        start = time.process_time()
        for request in requests:
            w.chat(**request)
        return time.process_time() - start

    def recording() -> float:
        w.reset_chat()
        before()
        start = time.process_time()
        with rewind.record(path):
            for request in requests:
                recorded(**request)
        after()
        return time.process_time() - start

    return plain, recording


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--observed", action="store_true", help="only the observed measurement (own process)")
    args = parser.parse_args(argv)
    if args.observed:
        return observed(args.calls, args.rounds)

    report = c.Reporter("record", f"record overhead: {args.calls:,} decorated chat calls")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        plain, recording = timed_runs(w.chat_requests(args.calls), path)
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
    # The observed case sets the global tracer provider, which can be set once per process.
    child = subprocess.call(
        [sys.executable, __file__, "--observed", "--calls", str(args.calls), "--rounds", str(args.rounds)]
    )
    return max(report.exit_code(), child)


def observed(calls: int, rounds: int) -> int:
    """Recording under an application provider: full GenAI spans, batch-exported."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    exporter = InMemorySpanExporter()
    # A queue that holds a whole run: a full queue drops spans, which would flatter the figure.
    processor = BatchSpanProcessor(exporter, max_queue_size=calls * 2, max_export_batch_size=512)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)

    report = c.Reporter("record", f"record overhead, observed: {calls:,} calls, BatchSpanProcessor")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        # process_time counts all threads: the batch worker's exports are part of the cost.
        plain, recording = timed_runs(w.chat_requests(calls), path, before=exporter.clear, after=processor.force_flush)
        recording()
        spans = [s for s in exporter.get_finished_spans() if s.attributes and "rewind.seq" in s.attributes]
        assert len(spans) == calls, f"{len(spans)} call spans exported, expected {calls}"
        sample = spans[-1]
        attributes = dict(sample.attributes or {})
        tracer = provider.get_tracer("bench")

        def bare() -> float:
            exporter.clear()
            start = time.process_time()
            for _ in range(calls):
                tracer.start_span(sample.name, kind=SpanKind.CLIENT, attributes=attributes).end()
            processor.force_flush()
            return time.process_time() - start

        plain_s, record_s, bare_s = c.best_of(rounds, plain, recording, bare)
        lines = sum(1 for _ in path.open("rb")) - 1
    per_call = 1e6 / calls
    report.note(f"{len(attributes)} attributes per call span; {lines:,} steps in the trace (written by the exporter)")
    report.add(
        c.Result(
            "record",
            "record overhead per call, observed",
            (record_s - plain_s) * per_call,
            "us",
            floor=bare_s * per_call,
            floor_name="bare SDK span, same attributes, batch-exported",
            target=OBSERVED_TARGET_US,
            goal="max",
        )
    )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
