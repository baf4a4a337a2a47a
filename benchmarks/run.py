"""Run every benchmark module and summarize: ``make bench``.

    python benchmarks/run.py [-k NAME] [--list] [--smoke]

Runs each ``benchmarks/bench_*.py`` (this suite's modules and any added later, in
name order) as its own process, so one module's memory, caches and global state
never colour another's figures. Each module prints its figures beside floors it
measured in the same run; modules that report through ``_common.Reporter`` are
also collected into a summary of every target. Exit status: 0 when every module
succeeded and met its targets, 1 otherwise.

``--smoke`` (``make bench-smoke``, a CI step) runs every module at the tiny sizes of
``SMOKE`` and gives no timing verdict: a missed target is fine, a module that crashes,
or one that ``SMOKE`` does not know, fails the run. It proves each script still runs
against today's code, so a benchmark cannot rot unnoticed between two ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common as c  # noqa: E402 - needs the path above

# Per module: arguments small enough that the whole suite runs in a few minutes. A new
# bench_*.py needs its line here, or --smoke fails naming it.
SMALL = ["--calls", "40", "--rounds", "1"]
SMOKE: dict[str, list[str]] = {
    "bench_baseline": SMALL,
    "bench_blobs": ["--turns", "5", "--size", "20000"],
    "bench_compact": SMALL,
    "bench_fireworks": SMALL,
    "bench_groq": SMALL,
    "bench_growth": [*SMALL, "--payloads", "1,4", "--threads", "1,2"],
    "bench_hybrid": SMALL,
    "bench_import": ["--spans", "200", "--rounds", "1"],
    "bench_litellm": SMALL,
    "bench_matching": ["--events", "200", "--repeat", "1"],
    "bench_mcp": SMALL,
    "bench_memory": ["--events", "5", "--size", "20000"],
    "bench_openai": SMALL,
    "bench_proxy": [*SMALL, "--clients", "1,2"],
    "bench_record": SMALL,
    "bench_replay": SMALL,
    "bench_report": SMALL,
    "bench_together": SMALL,
    "bench_trace_io": [*SMALL, "--scaling", ""],
    "bench_views": [*SMALL, "--tui-steps", "2000"],
}
# Runs a module as __main__ and tells its verdict from a crash: a module exits 1 when it
# missed a target, but so does Python on an uncaught exception.
_SMOKE_RUNNER = """
import runpy, sys, traceback
path = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(path, run_name="__main__")
except SystemExit as exit:
    code = exit.code
    sys.exit(0 if code in (None, 0, 1) else code)  # 1: a target missed, no verdict in a smoke run
except BaseException:
    traceback.print_exc()
    sys.exit(3)
"""


def command(path: Path, smoke: bool) -> list[str]:
    if not smoke:
        return [sys.executable, str(path)]
    return [sys.executable, "-c", _SMOKE_RUNNER, str(path), *SMOKE[path.stem]]


def modules(selected: list[str]) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if selected:
        found = [path for path in found if any(name in path.stem for name in selected)]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "-k",
        dest="selected",
        action="append",
        default=[],
        metavar="NAME",
        help="run only modules whose name contains NAME (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list the modules and exit")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no timing verdicts: does every script run?")
    args = parser.parse_args(argv)

    chosen = modules(args.selected)
    if args.list or not chosen:
        for path in chosen:
            print(path.relative_to(HERE.parent))
        return 0 if chosen or args.list else 1

    unknown = [path.stem for path in chosen if args.smoke and path.stem not in SMOKE]
    if unknown:
        print(f"no smoke sizes for {', '.join(unknown)}: add them to SMOKE in benchmarks/run.py", file=sys.stderr)
        return 2
    mode = " (smoke: tiny sizes, no verdicts)" if args.smoke else ""
    print(f"rewind benchmarks{mode}: {len(chosen)} module(s), python {sys.version.split()[0]}, {os.cpu_count()} cpu(s)")
    statuses: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory(prefix="rewind-bench-results-") as tmp:
        results_file = Path(tmp) / "results.jsonl"
        env = dict(os.environ, **{c.RESULTS_ENV: str(results_file)})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
        for path in chosen:
            start = time.perf_counter()
            code = subprocess.call(command(path, args.smoke), cwd=HERE.parent, env=env)
            statuses.append((path.stem, code, time.perf_counter() - start))
        results = (
            [c.Result(**json.loads(line)) for line in results_file.read_text().splitlines()]
            if results_file.exists()
            else []
        )

    print("\n== summary ==")
    for stem, code, seconds in statuses:
        state = {0: "ok"}.get(code, "targets missed" if code == 1 else f"failed (exit {code})")
        print(f"{stem:<24} {state:<16} {seconds:6.1f} s")
    targets = [r for r in results if r.met is not None and not args.smoke]
    if targets:
        print()
        for result in targets:
            print(f"[{'PASS' if result.met else 'MISS'}] {result.module}: {c.describe(result).strip()}")
    return 0 if all(code == 0 for _, code, _ in statuses) else 1


if __name__ == "__main__":
    raise SystemExit(main())
