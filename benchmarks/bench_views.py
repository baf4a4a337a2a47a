"""``rewind diff`` of two long traces and the TUI's first screen, against ``Trace.open``.

    python benchmarks/bench_views.py [--calls N] [--rounds R] [--tui-steps N]

Diff: two runs of the standard long run (``--calls`` chat calls each; the second one
follows the first for half the run, then another conversation, so the second half of
its steps differ: a run that diverged midway) compared by
``rewind.diff.diff_traces`` (what ``rewind diff`` prints), opening both included, against
``Trace.open`` of both. Target (issue 34): within 3x.

TUI: a trace of ``--tui-steps`` small tool calls (default 1,000,000, in the writer's own
layout), opened, and the browser's first screen built from it: ``rewind.tui.Browser``
over the open trace, the labels of the first 50 rows and the selected step's detail
(what the first frame draws; curses itself only copies those strings out). Target
(issue 34): the first screen, on top of the open, costs under 1x ``Trace.open``.
``rewind report`` against ``Trace.open`` is ``bench_report.py``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as c
import _workload as w
from bench_trace_io import write_small_trace

from rewind.cli.tui import Browser
from rewind.inspection.diff import diff_traces, render_text
from rewind.storage.trace import Trace

DIFF_TARGET = 3.0
TUI_TARGET = 1.0
ROWS = 50


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tui-steps", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    report = c.Reporter("views", f"diff of two {args.calls:,}-step traces; TUI first screen of {args.tui_steps:,}")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        a, b = Path(tmp) / "a.rewind", Path(tmp) / "b.rewind"
        w.record_chat_run(a, w.chat_requests(args.calls))
        half = args.calls // 2
        w.record_chat_run(b, w.chat_requests(args.calls)[:half] + w.chat_requests(args.calls - half, seed=11))

        def open_both() -> float:
            start = time.process_time()
            Trace.open(a), Trace.open(b)
            return time.process_time() - start

        def diff() -> float:
            start = time.process_time()
            result = diff_traces(a, b)
            elapsed = time.process_time() - start
            assert result.entries, "the runs differ"
            return elapsed

        def printed() -> float:
            start = time.process_time()
            render_text(diff_traces(a, b))
            return time.process_time() - start

        open_s, diff_s = c.best_of(args.rounds, open_both, diff)
        report.add(
            c.Result(
                "views",
                "rewind diff, diverged midway (opens included)",
                diff_s,
                "s",
                floor=open_s,
                floor_name="Trace.open of both",
                target=DIFF_TARGET,
                goal="max",
                target_on="ratio",
            )
        )
        # What the command prints: every changed row scored and explained (informational:
        # the target is on the alignment, which scores only the rows someone reads).
        open_s, printed_s = c.best_of(max(1, args.rounds // 2), open_both, printed)
        report.add(
            c.Result(
                "views",
                "rewind diff printed (render_text of every changed row)",
                printed_s,
                "s",
                floor=open_s,
                floor_name="Trace.open of both",
            )
        )
        a.unlink()
        b.unlink()

        big = Path(tmp) / "big.rewind"
        write_small_trace(big, args.tui_steps)
        opened: list[Trace] = []

        def open_big() -> float:
            start = time.process_time()
            opened[:] = [Trace.open(big)]
            return time.process_time() - start

        def first_screen() -> float:
            trace = opened[0]
            start = time.process_time()
            browser = Browser(trace)
            for index in range(min(ROWS, len(browser.visible))):
                browser.label(index, selected=index == 0)
            browser.detail(100)
            return time.process_time() - start

        open_big_s, screen_s = c.best_of(max(2, args.rounds // 2), open_big, first_screen)
        report.add(
            c.Result(
                "views",
                f"TUI first screen, {args.tui_steps:,} steps (after the open)",
                screen_s,
                "s",
                floor=open_big_s,
                floor_name="Trace.open of the trace",
                target=TUI_TARGET,
                goal="max",
                target_on="ratio",
            )
        )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
