"""How each path's cost grows with steps, payload size and concurrency.

    python benchmarks/bench_growth.py [--steps 1000,5000,20000] [--payloads 1,4,16,64]
                                      [--threads 1,4,16] [--rounds R]

Three small tables, each row beside a floor measured in the same run (CPU time, best of
``--rounds``), so a row says how far a path stays from the least it must do as the run
grows, not how fast this machine is today:

- **Steps** (the standard chat workload, ~4.4 KB a step): recording, strict replay,
  ``Trace.open``, ``Trace.load``, ``rewind diff`` of two runs that part midway, and the
  HTML report, per step, against reading the file and ``json.loads`` of every line
  (``Trace.open`` against reading and splitting its lines).
- **Payload size** (1,000 steps, each call re-sending 1 to 64 KB of history): the same
  paths, per step and per KB of trace.
- **Concurrency** (the same 2,000 calls made from 1, 4 or 16 ``ThreadPoolExecutor``
  workers inside one session): recording and replay (``match="parallel"``, which pairs
  calls by identity whatever order the threads make them in), per call, over the same
  calls made undecorated from the same pool.

Informational: no target (issue 34 asks for the tables, docs/benchmarks.md keeps them).
A path whose ratio to its floor climbs down a column grows faster than the data it reads.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _common as c
import _workload as w

import rewind
from rewind.inspection.diff import diff_traces
from rewind.report import render_report
from rewind.storage.trace import Trace

#: History messages re-sent per call (each ~370 bytes) for a payload of about N KB.
_WINDOW_FOR_KB = {1: 2, 4: 10, 16: 43, 64: 173}


def requests(calls: int, *, window: int = w.WINDOW, seed: int = 7) -> list[dict[str, Any]]:
    """The standard chat requests with ``window`` messages of history each."""
    history = w.conversation(calls + window, seed=seed)
    system = {"role": "system", "content": w.SYSTEM_PROMPT}
    return [
        {"messages": [system, *history[i : i + window]], "model": w.MODEL, "temperature": 0.0} for i in range(calls)
    ]


def timed(fn: Callable[[], Any]) -> Callable[[], float]:
    def measure() -> float:
        start = time.process_time()
        result = fn()
        elapsed = time.process_time() - start
        del result  # freeing what was built is not part of building it
        return elapsed

    return measure


def record_run(path: Path, calls: list[dict[str, Any]]) -> Callable[[], float]:
    recorded = rewind.llm(w.chat)

    def run() -> float:
        w.reset_chat()
        start = time.process_time()
        with rewind.record(path):
            for call in calls:
                recorded(**call)
        return time.process_time() - start

    return run


def replay_run(path: Path, calls: list[dict[str, Any]]) -> Callable[[], float]:
    replayed = rewind.llm(w.chat)

    def run() -> float:
        start = time.process_time()
        with rewind.replay(path, match="strict", require_full_consumption=True):
            for call in calls:
                replayed(**call)
        return time.process_time() - start

    return run


def paths_at(
    tmp: Path, label: str, calls: list[dict[str, Any]], parted: list[dict[str, Any]], rounds: int
) -> dict[str, Any]:
    """Every path's best time over one run's trace, and the floors beside them."""
    path, other = tmp / f"{label}.rewind", tmp / f"{label}-b.rewind"
    record_s = record_run(path, calls)()  # written once before timing: the replay and readers need it
    w.record_chat_run(other, parted)
    plain = plain_calls(calls)
    record_s, plain_s, replay_s, parse_s, split_s, open_s, load_s, diff_s, report_s = c.best_of(
        rounds,
        record_run(path, calls),
        plain,
        replay_run(path, calls),
        c.read_and_parse(path),
        c.read_and_split(path),
        timed(lambda: Trace.open(path)),
        timed(lambda: Trace.load(path)),
        timed(lambda: diff_traces(path, other)),
        timed(lambda: render_report(path)),
    )
    return {
        "size": path.stat().st_size,
        "record": record_s - plain_s,
        "replay": replay_s,
        "parse": parse_s,
        "split": split_s,
        "open": open_s,
        "load": load_s,
        "diff": diff_s,
        "report": report_s,
    }


def plain_calls(calls: list[dict[str, Any]]) -> Callable[[], float]:
    def run() -> float:
        w.reset_chat()
        start = time.process_time()
        for call in calls:
            w.chat(**call)
        return time.process_time() - start

    return run


#: (row, what is timed, the floor it is divided by, that floor's name)
_COLUMNS = (
    ("record overhead", "record", "parse", "read + json.loads"),
    ("strict replay", "replay", "parse", "read + json.loads"),
    ("Trace.open", "open", "split", "read + split lines"),
    ("Trace.load", "load", "parse", "read + json.loads"),
    ("rewind diff (both opened)", "diff", "parse", "read + json.loads of one"),
    ("rewind report", "report", "parse", "read + json.loads"),
)


def print_table(title: str, header: str, rows: list[tuple[str, int, dict[str, Any]]]) -> None:
    print(f"\n{title}")
    names = [name for name, _, _ in rows]
    print(f"   {'path':<28}" + "".join(f"{header + ' ' + name:>26}" for name in names))
    for label, key, floor, _ in _COLUMNS:
        cells = []
        for _, steps, figures in rows:
            per_step = figures[key] / steps * 1e6
            cells.append(f"{per_step:9.1f} µs {figures[key] / figures[floor]:5.2f}x")
        print(f"   {label:<28}" + "".join(f"{cell:>26}" for cell in cells))
    print("   (µs per step; x = the path's time over its floor: reading the file and json.loads of every line,")
    print("    for Trace.open reading it and splitting its lines; for a diff, of one of the two runs)")


def concurrency(
    tmp: Path, calls: list[dict[str, Any]], threads: list[int], rounds: int
) -> list[tuple[int, float, float]]:
    """The pooled figures for each pool size (the workers run in the session's context)."""
    rows = []
    unpatch = rewind.patch_thread_pool()
    try:
        for workers in threads:
            rows.append(_pooled_figures(tmp, calls, workers, rounds))
    finally:
        unpatch()
    return rows


def _pooled_figures(tmp: Path, calls: list[dict[str, Any]], workers: int, rounds: int) -> tuple[int, float, float]:
    """(workers, recording overhead per call, replay per call) for one pool size."""
    path = tmp / f"threads-{workers}.rewind"
    function = rewind.llm(w.chat)

    def pooled(fn: Callable[..., Any], workers: int = workers) -> None:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(fn, **call) for call in calls]:
                future.result()

    def record(path: Path = path) -> float:
        w.reset_chat()
        start = time.process_time()
        with rewind.record(path):
            pooled(function)
        return time.process_time() - start

    def plain() -> float:
        w.reset_chat()
        start = time.process_time()
        pooled(w.chat)
        return time.process_time() - start

    def replay(path: Path = path) -> float:
        start = time.process_time()
        with rewind.replay(path, match="parallel", require_full_consumption=True):
            pooled(function)
        return time.process_time() - start

    record()
    record_s, plain_s, replay_s = c.best_of(rounds, record, plain, replay)
    return workers, (record_s - plain_s) / len(calls) * 1e6, (replay_s - plain_s) / len(calls) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="1000,5000,20000", help="step counts of the steps table")
    parser.add_argument("--payloads", default="1,4,16,64", help="KB of history per call (1, 4, 16, 64)")
    parser.add_argument("--payload-steps", type=int, default=1000)
    parser.add_argument("--threads", default="1,4,16", help="ThreadPoolExecutor sizes")
    parser.add_argument("--thread-calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    # The runner's --smoke passes --calls: the smallest sizes everywhere.
    parser.add_argument("--calls", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = [int(n) for n in args.steps.split(",") if n]
    payloads = [int(n) for n in args.payloads.split(",") if n]
    threads = [int(n) for n in args.threads.split(",") if n]
    payload_steps, thread_calls = args.payload_steps, args.thread_calls
    if args.calls is not None:
        steps, payload_steps, thread_calls = [args.calls], args.calls, args.calls
    unknown = [kb for kb in payloads if kb not in _WINDOW_FOR_KB]
    if unknown:
        parser.error(f"--payloads takes {sorted(_WINDOW_FOR_KB)}, not {unknown}")

    report = c.Reporter("growth", "how cost grows with steps, payload size and concurrency")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp_name:
        tmp = Path(tmp_name)
        by_steps = []
        for count in steps:
            calls = requests(count)
            parted = calls[: count // 2] + requests(count - count // 2, seed=11)
            by_steps.append((f"{count:,}", count, paths_at(tmp, f"steps-{count}", calls, parted, args.rounds)))
        print_table("By steps (the standard ~4.4 KB step)", "steps", by_steps)

        by_payload = []
        for kb in payloads:
            window = _WINDOW_FOR_KB[kb]
            calls = requests(payload_steps, window=window)
            parted = calls[: payload_steps // 2] + requests(payload_steps - payload_steps // 2, window=window, seed=11)
            figures = paths_at(tmp, f"payload-{kb}", calls, parted, args.rounds)
            by_payload.append((f"{figures['size'] / payload_steps / 1024:.1f} KB", payload_steps, figures))
        print_table(f"By payload size ({payload_steps:,} steps; KB of trace per step)", "step", by_payload)

        rows = concurrency(tmp, requests(thread_calls), threads, args.rounds)
    print(
        f"\nBy concurrency ({thread_calls:,} calls from a ThreadPoolExecutor;"
        " µs per call over the same calls undecorated)"
    )
    print(f"   {'workers':>8}{'record overhead':>18}{'replay':>12}")
    for workers, record_us, replay_us in rows:
        print(f"   {workers:>8}{record_us:15.1f} µs{replay_us:9.1f} µs")
    for workers, record_us, replay_us in rows:
        report.add(c.Result("growth", f"record overhead per call, {workers} worker(s)", record_us, "us"))
        report.add(c.Result("growth", f"replay per call, {workers} worker(s)", replay_us, "us"))
    for name, _count, figures in by_steps:
        for label, key, floor, floor_name in _COLUMNS:
            report.add(
                c.Result(
                    "growth",
                    f"{label}, {name} steps",
                    figures[key],
                    "s",
                    floor=figures[floor],
                    floor_name=floor_name,
                    target_on="ratio",
                )
            )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
