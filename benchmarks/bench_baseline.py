"""agent-rewind-otel against the stdlib-only agent-rewind 0.8.0, on the same workload.

    python benchmarks/bench_baseline.py [--calls N] [--rounds R] [--python PATH]

Both sides run ``benchmarks/_baseline_run.py`` (the standard 5,000-call long run:
record, ``Trace.open``, ``Trace.load``, strict replay), each in a fresh process of its
own interpreter: agent-rewind 0.8.0 also imports as ``rewind``, so it lives in its own
venv, ``.venv-bench-baseline`` (``make bench`` creates it: ``pip install
agent-rewind==0.8.0``). The two processes alternate, twice, and each figure keeps its
best; each side also measures the parse floor in its own process, so the ratios are
comparable even when the machine's load changes between them.

Reported: ours / theirs for each operation (below 1 is faster), each against the target
issue 34 set (``TARGETS``; docs/benchmarks.md). Skipped, with a note, without the venv.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import _common as c
import _workload as w

HERE = Path(__file__).resolve().parent
BASELINE_PYTHON = HERE.parent / ".venv-bench-baseline" / "bin" / "python"
OPERATIONS = ("record", "open", "load", "replay")
#: Ours over theirs, at most (record: the overhead over the undecorated calls).
TARGETS = {"record": 0.2, "open": 0.25, "load": 0.6, "replay": 0.25}


def run_side(python: str, calls: int, rounds: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env["PYTHONPATH"] = str(HERE)  # _workload only: each side imports its own rewind
    out = subprocess.run(
        [python, str(HERE / "_baseline_run.py"), "--calls", str(calls), "--rounds", str(rounds)],
        env=env,
        cwd=str(HERE),
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=str(BASELINE_PYTHON), help="the interpreter with agent-rewind 0.8.0")
    args = parser.parse_args(argv)

    report = c.Reporter("baseline", f"agent-rewind-otel vs agent-rewind 0.8.0: {args.calls:,} calls")
    if not Path(args.python).exists():
        # A failure, not a skip: make bench and make bench-smoke create it, so its absence is a broken setup.
        report.note(f"cannot run: no {args.python} (make bench creates it: pip install agent-rewind==0.8.0)")
        return 2
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for _ in range(2):
        ours.append(run_side(sys.executable, args.calls, args.rounds))
        theirs.append(run_side(args.python, args.calls, args.rounds))
    mine = {key: min(side[key] for side in ours) for key in (*OPERATIONS, "plain", "parse", "split")}
    base = {key: min(side[key] for side in theirs) for key in (*OPERATIONS, "plain", "parse", "split")}
    report.note(f"ours: {ours[0]['where']} ({ours[0]['package']})")
    report.note(f"theirs: {theirs[0]['where']} ({theirs[0]['package']})")
    report.note(f"trace sizes: ours {c.fmt(ours[0]['size'], 'B')}, theirs {c.fmt(theirs[0]['size'], 'B')}")
    for op in OPERATIONS:
        a, b = mine[op], base[op]
        if op == "record":
            a, b = a - mine["plain"], b - base["plain"]
        floor = "split" if op == "open" else "parse"
        report.add(
            c.Result(
                "baseline",
                f"{op}: ours vs agent-rewind 0.8.0" + (" (overhead)" if op == "record" else ""),
                a,
                "s",
                floor=b,
                floor_name="agent-rewind 0.8.0, same workload",
                floor_label="theirs",
                target=TARGETS[op],
                goal="max",
                target_on="ratio",
                note=(
                    f"ours/theirs {a / b:.2f}x; vs own floor ({floor}): ours {a / mine[floor]:.2f}x, "
                    f"theirs {b / base[floor]:.2f}x"
                ),
            )
        )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
