"""Run every benchmark module and summarize: ``make bench``.

    python benchmarks/run.py [-k NAME] [--list]

Runs each ``benchmarks/bench_*.py`` (this suite's modules and any added later, in
name order) as its own process, so one module's memory, caches and global state
never colour another's figures. Each module prints its figures beside floors it
measured in the same run; modules that report through ``_common.Reporter`` are
also collected into a summary of every target. Exit status: 0 when every module
succeeded and met its targets, 1 otherwise.
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
    args = parser.parse_args(argv)

    chosen = modules(args.selected)
    if args.list or not chosen:
        for path in chosen:
            print(path.relative_to(HERE.parent))
        return 0 if chosen or args.list else 1

    print(f"rewind benchmarks: {len(chosen)} module(s), python {sys.version.split()[0]}, {os.cpu_count()} cpu(s)")
    statuses: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory(prefix="rewind-bench-results-") as tmp:
        results_file = Path(tmp) / "results.jsonl"
        env = dict(os.environ, **{c.RESULTS_ENV: str(results_file)})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
        for path in chosen:
            start = time.perf_counter()
            code = subprocess.call([sys.executable, str(path)], cwd=HERE.parent, env=env)
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
    targets = [r for r in results if r.met is not None]
    if targets:
        print()
        for result in targets:
            print(f"[{'PASS' if result.met else 'MISS'}] {result.module}: {c.describe(result).strip()}")
    return 0 if all(code == 0 for _, code, _ in statuses) else 1


if __name__ == "__main__":
    raise SystemExit(main())
