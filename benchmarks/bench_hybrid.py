"""Hybrid replay's served calls against strict replay's, per call.

    python benchmarks/bench_hybrid.py [--calls N] [--rounds R]

On the standard long run (``--calls`` decorated chat calls, recorded first). Strict
replay serves every call (``rewind.replay(path, match="strict")``). The hybrid replay
is ``rewind.replay(path, live=["tool"])``: a policy that runs tool calls live, on a run
of model calls only, so every call still goes through the hybrid path (the policy's
decision, the matcher over the served side, the served step renumbered) and is served;
nothing live is timed. Each whole run is timed (opening the trace included), and so is
the same replay with no call made (opening the trace and setting the replay up: a
hybrid replay also sorts the served side into its matcher's queues); every measure
alternates within a round, and the best round of each is kept.

Target: hybrid per served call (whole run minus setup, per call) at most 1.0x strict's
(issue 34). The whole runs, setup included, are reported beside each other too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import _common as c
import _workload as w

import rewind

TARGET_RATIO = 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    requests = w.chat_requests(args.calls)
    replayed = rewind.llm(w.chat)
    report = c.Reporter("hybrid", f"hybrid vs strict replay of {args.calls:,} recorded chat calls")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        w.record_chat_run(path, requests)

        def run(calls: list[dict[str, c.Any]], **options: c.Any) -> c.Callable[[], float]:
            def measure() -> float:
                start = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", rewind.UnconsumedEventsWarning)  # the setup-only runs
                    with rewind.replay(path, **options):
                        for request in calls:
                            replayed(**request)
                return time.process_time() - start

            return measure

        strict, hybrid = {"match": "strict"}, {"live": ["tool"]}
        run(requests, **strict)()  # warm up
        run(requests, **hybrid)()
        strict_s, hybrid_s, strict_setup, hybrid_setup = c.best_of(
            args.rounds, run(requests, **strict), run(requests, **hybrid), run([], **strict), run([], **hybrid)
        )

    report.add(
        c.Result(
            "hybrid",
            "hybrid replay, per served call",
            (hybrid_s - hybrid_setup) / args.calls * 1e6,
            "us",
            floor=(strict_s - strict_setup) / args.calls * 1e6,
            floor_name="strict replay, per call, same run",
            target=TARGET_RATIO,
            goal="max",
            target_on="ratio",
        )
    )
    report.add(
        c.Result(
            "hybrid",
            "hybrid replay, whole run (setup included)",
            hybrid_s,
            "s",
            floor=strict_s,
            floor_name="strict replay, whole run",
            floor_label="reference",
            target_on="ratio",
            note=f"setup: hybrid {c.fmt(hybrid_setup, 's')}, strict {c.fmt(strict_setup, 's')}",
        )
    )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
