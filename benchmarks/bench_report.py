"""Building the HTML report of a long trace, against opening it.

    python benchmarks/bench_report.py [--calls N] [--rounds R]

On the 5,000-event, ~22 MB trace of the standard long run. ``Trace.open`` is the floor:
a report must not cost much more than looking at the trace at all. Building one opens
the trace, lays its skeletons out as columns and embeds each step's line as the file
holds it (a big line is parsed and cut); the page itself summarizes the steps and adds
up tokens and cost when it opens.

Target (issue 19, "no more than a few times ``Trace.open``"): building the report,
opening included, within 3x ``Trace.open``. ``Trace.load`` (every body parsed) is
reported for scale, and the report's size against the trace's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as c
import _workload as w

from rewind.report import render_report
from rewind.storage.trace import Trace

TARGET = 3.0


def timed(fn: object, path: Path) -> c.Callable[[], float]:
    def measure() -> float:
        start = time.process_time()
        fn(path)  # type: ignore[operator]
        return time.process_time() - start

    return measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    report = c.Reporter("report", f"HTML report of a {args.calls:,}-event trace")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        w.record_chat_run(path, w.chat_requests(args.calls))
        size = path.stat().st_size
        open_s, build_s, load_s = c.best_of(
            args.rounds, timed(Trace.open, path), timed(render_report, path), timed(Trace.load, path)
        )
        html = render_report(path)

    report.add(
        c.Result(
            "report",
            f"render_report ({c.fmt(size, 'B')} trace)",
            build_s,
            "s",
            floor=open_s,
            floor_name="Trace.open, skeletons only",
            target=TARGET,
            goal="max",
            target_on="ratio",
        )
    )
    report.add(
        c.Result(
            "report",
            "render_report vs Trace.load",
            build_s,
            "s",
            floor=load_s,
            floor_label="reference",
            floor_name="Trace.load, every body parsed",
            note=f"{build_s / load_s:.2f}x",
        )
    )
    report.add(c.Result("report", "report size", html.size, "B", note=f"{html.size / size:.2f}x the trace file"))
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
