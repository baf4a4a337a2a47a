"""One side of ``bench_baseline``: the standard long run, timed, in whatever ``rewind`` this
interpreter imports (agent-rewind-otel here, or agent-rewind 0.8.0 in its own venv).

    python benchmarks/_baseline_run.py --calls N --rounds R

Prints one JSON object of best-of-rounds CPU seconds: the plain calls, recording them,
``Trace.open``, ``Trace.load``, a strict replay, and the floors (read + split, read +
``json.loads`` of every line). Stdlib and ``rewind``'s public API only, so the same file
runs against both packages: both sides are measured by the same code on the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import _workload as w

import rewind


def best(rounds: int, fn: object) -> float:
    out = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        result = fn()  # type: ignore[operator]
        out = min(out, time.process_time() - start)
        del result
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    requests = w.chat_requests(args.calls)
    recorded = rewind.llm(w.chat)
    with tempfile.TemporaryDirectory(prefix="rewind-bench-baseline-") as tmp:
        path = Path(tmp) / "run.rewind"

        def plain() -> None:
            w.reset_chat()
            for request in requests:
                w.chat(**request)

        def record() -> None:
            w.reset_chat()
            with rewind.record(path):
                for request in requests:
                    recorded(**request)

        def replay() -> None:
            with rewind.replay(path, match="strict", require_full_consumption=True):
                for request in requests:
                    recorded(**request)

        def split() -> list[bytes]:
            with open(path, "rb") as fh:
                return fh.read().splitlines()

        def parse() -> None:
            with open(path, "rb") as fh:
                for line in fh.read().splitlines():
                    json.loads(line)

        record()  # warm up, and the trace every other measure reads
        figures = {
            "plain": best(args.rounds, plain),
            "record": best(args.rounds, record),
            "open": best(args.rounds, lambda: rewind.Trace.open(path)),
            "load": best(args.rounds, lambda: rewind.Trace.load(path)),
            "replay": best(args.rounds, replay),
            "split": best(args.rounds, split),
            "parse": best(args.rounds, parse),
            "size": path.stat().st_size,
            "package": getattr(rewind, "__version__", "?"),
            "where": str(Path(rewind.__file__).parent),
            "python": sys.version.split()[0],
        }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
