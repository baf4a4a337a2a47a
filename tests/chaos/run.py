"""The standing chaos suite: attack rewind the way the world will, print the figures, fail on a regression.

    .venv/bin/python tests/chaos/run.py            # every scenario (make test-chaos)
    .venv/bin/python tests/chaos/run.py kill fuzz  # some of them
    REWIND_CHAOS_SEED=7 ...                        # another random draw (default: fixed)

Each scenario (a module beside this one with ``run(rng, work) -> figures``) runs under a
time limit, on loopback only. Bounds live in ``thresholds.py``; the summary table at the
end marks each figure ok or FAIL, and the exit status is 1 when any fails (or a scenario
crashed or ran out of time), 0 otherwise.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the scenarios, and tests/ helpers they reuse

from thresholds import NETWORK_EXPECTED, THRESHOLDS  # noqa: E402

#: scenario module -> its time limit in seconds (the whole suite stays near five minutes).
SCENARIOS: dict[str, float] = {
    "kill": 90,
    "disk": 60,
    "concurrency": 60,
    "two_processes": 60,
    "fuzz": 180,
    "otlp": 90,
    "report": 90,
    "network": 90,
    "hostile_import": 150,
    "startup": 150,
}

_OPERATORS = {
    ">=": lambda value, bound: value >= bound,
    "<=": lambda value, bound: value <= bound,
    "==": lambda value, bound: value == bound,
}


def judge(key: str, value: Any) -> tuple[str, str]:
    """``(bound, verdict)`` for one figure: verdict ``ok``, ``FAIL`` or ``info``."""
    scenario, _, name = key.partition(".")
    if scenario == "network" and name in NETWORK_EXPECTED:
        expected = NETWORK_EXPECTED[name]
        if expected == "blocked":
            return "blocked", "ok" if value == "blocked" else "FAIL"
        return f"{expected} (known hole)", "ok" if value == expected else "BETTER: update thresholds"
    if key not in THRESHOLDS:
        return "", "info"
    operator, bound = THRESHOLDS[key]
    if not isinstance(value, (int, float)):
        return f"{operator} {bound:g}", "FAIL"
    return f"{operator} {bound:g}", "ok" if _OPERATORS[operator](value, bound) else "FAIL"


def run_scenario(name: str, seconds: float, seed: int, work: Path) -> tuple[dict[str, Any], str | None]:
    """The scenario's figures, and why it did not finish (``None`` when it did).

    Each scenario runs in a process of its own (what it patches, forks or leaks ends
    with it), killed when it outlives its time limit."""
    command = [sys.executable, __file__, "--scenario", name, str(seed), str(work)]
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=seconds, cwd=HERE.parent.parent)
    except subprocess.TimeoutExpired as exc:
        return _figures(exc.stdout), f"killed after {seconds:.0f} s"
    figures = _figures(done.stdout)
    if done.returncode != 0:
        return figures, f"exit status {done.returncode} (its traceback is above)"
    return figures, None


def _figures(stdout: str | bytes | None) -> dict[str, Any]:
    text = stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout or ""
    for line in reversed(text.splitlines()):
        if line.startswith(_MARK):
            figures: dict[str, Any] = json.loads(line[len(_MARK) :])
            return figures
    return {}


_MARK = "chaos-figures: "


def scenario_main(name: str, seed: int, work: Path) -> int:
    """In the scenario's own process: run it and print its figures on the last line."""
    module = importlib.import_module(name)
    figures = module.run(random.Random(f"{name}-{seed}"), work)
    print(_MARK + json.dumps(figures), flush=True)
    return 0


def main(argv: list[str]) -> int:
    chosen = argv or list(SCENARIOS)
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    seed = int(os.environ.get("REWIND_CHAOS_SEED", "20261203"))
    rows: list[tuple[str, str, str, str]] = []
    failed = False
    root = Path(tempfile.mkdtemp(prefix="rewind-chaos-"))
    try:
        for name in chosen:
            work = root / name
            work.mkdir()
            started = time.monotonic()
            print(f"== {name} (limit {SCENARIOS[name]:.0f} s, seed {seed})", flush=True)
            figures, problem = run_scenario(name, SCENARIOS[name], seed, work)
            took = time.monotonic() - started
            for key, value in figures.items():
                bound, verdict = judge(f"{name}.{key}", value)
                failed |= verdict == "FAIL"
                rows.append((f"{name}.{key}", _show(value), bound, verdict))
            expected = [k for k in THRESHOLDS if k.startswith(f"{name}.")] + [
                f"network.{k}" for k in NETWORK_EXPECTED if name == "network"
            ]
            for key in expected:
                if key.partition(".")[2] not in figures:
                    rows.append((key, "missing", "", "FAIL"))
                    failed = True
            if problem is not None:
                failed = True
                rows.append((f"{name}.finished", "no", "yes", "FAIL"))
                print(f"   {name} did not finish: {problem}", file=sys.stderr, flush=True)
            rows.append((f"{name}.seconds", f"{took:.1f}", f"<= {SCENARIOS[name]:.0f}", "info"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _print_table(rows)
    print("chaos: FAILED (see the FAIL rows)" if failed else "chaos: every figure within its bound", flush=True)
    return 1 if failed else 0


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _print_table(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("figure", "value", "bound", "verdict")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    line = "  ".join("-" * w for w in widths)
    print("\n" + "  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print(line)
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    print(line, flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scenario"]:
        sys.exit(scenario_main(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])))
    sys.exit(main(sys.argv[1:]))
