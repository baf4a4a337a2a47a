"""Strict replay of a long run: 5,000 recorded chat calls (~22 MB) served back.

    python benchmarks/bench_replay.py [--calls N] [--rounds R]

The agent loop makes the same 5,000 decorated calls inside ``rewind.replay()`` (strict
matching); the measurement covers the whole ``with`` block: opening the trace lazily,
canonicalizing and fingerprinting every request, one OpenTelemetry span per call,
matching, reading each served event's response back from the file, reviving it.

Target: the whole run within 2.0x its floor, reading the file and ``json.loads`` of
every line (the least any full replay must do), measured in the same run; also one
bare OpenTelemetry span per call, for scale.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as c
import _workload as w

import rewind

TARGET_RATIO = 2.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    requests = w.chat_requests(args.calls)
    replayed = rewind.llm(w.chat)
    report = c.Reporter("replay", f"strict replay of {args.calls:,} recorded chat calls")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        w.record_chat_run(path, requests)
        size = path.stat().st_size

        def replay() -> float:
            start = time.process_time()
            with rewind.replay(path, match="strict", require_full_consumption=True):
                for request in requests:
                    replayed(**request)
            return time.process_time() - start

        replay()  # warm up
        replay_s, parse_s, span_s = c.best_of(args.rounds, replay, c.read_and_parse(path), c.bare_spans(args.calls))

    report.add(
        c.Result(
            "replay",
            f"strict replay, whole run ({c.fmt(size, 'B')})",
            replay_s,
            "s",
            floor=parse_s,
            floor_name="read + json.loads every line",
            target=TARGET_RATIO,
            goal="max",
            target_on="ratio",
        )
    )
    report.add(c.Result("replay", "per replayed call", replay_s / args.calls * 1e6, "us"))
    report.add(c.Result("replay", "bare OpenTelemetry spans, whole run", span_s, "s"))
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
