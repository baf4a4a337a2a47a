"""Matcher cost per call on a 5,000-event trace, next to a floor measured in the same run.

    python benchmarks/bench_matching.py [--events N] [--repeat R]

Budgets: strict and parallel at most 10 µs a call, fuzzy with the lexical backend at
most 1 ms a call with the default window. The trace is written to a temporary file
and opened lazily (``Trace.open``), as ``replay()`` does, so fuzzy pays for reading
recorded request bodies from disk like a real replay.

Costs are CPU time (``time.process_time``): matching is CPU-bound, and CPU time is
not inflated when other processes share the cores. The floor is a do-nothing
matcher (``return trace.events[cursor]``) driven by the same loop: the harness's
own cost on this machine today. A matcher's cost is reported as measured (floor
included), so the budget check is conservative.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewind.data.canonical import fingerprint
from rewind.matching.strategies import FuzzyMatcher, IncomingCall, OrderedMatcher, ParallelMatcher, StrictMatcher
from rewind.storage.trace import Event, Trace, TraceWriter, new_header

EVENTS = 5_000
HISTORY = 10  # messages re-sent per model call: consecutive requests overlap, as in a real agent
_VOCABULARY = (
    "agent flight search result price booking seat window departure arrival airport city hotel "
    "night weather forecast tool call returned user asked cheaper option tomorrow morning evening "
    "confirm cancel itinerary passenger total currency available next step plan check compare"
)


@dataclass
class Result:
    name: str
    per_call_us: float
    floor_us: float
    budget_us: float

    @property
    def ok(self) -> bool:
        return self.per_call_us <= self.budget_us


class _Floor:
    """The harness alone: serves by position without looking at anything."""

    positional = True

    def start(self, trace: Trace) -> None:
        pass

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        return trace.events[cursor]


# -- the workload ---------------------------------------------------------------------
def _requests(count: int, seed: int = 7) -> list[tuple[str, str, dict[str, Any]]]:
    """An agent run: model calls over a sliding history (~4 KB each), every third a tool call."""
    rng = random.Random(seed)
    words = _VOCABULARY.split()
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(rng.choices(words, k=60))}
        for i in range(count + HISTORY)
    ]
    system = {"role": "system", "content": "You are a careful travel assistant. " * 8}
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for i in range(count):
        if i % 3 == 2:
            calls.append(("tool", "search", {"query": " ".join(rng.choices(words, k=4)), "limit": 5}))
        else:
            calls.append(("llm", "chat", {"model": "gpt-4o-mini", "messages": [system, *messages[i : i + HISTORY]]}))
    return calls


def _drift(request: dict[str, Any]) -> dict[str, Any]:
    """The same request after a small refactor: one word of the newest content changed."""
    if "messages" in request:
        last = dict(request["messages"][-1])
        last["content"] = "revised " + last["content"]
        return {**request, "messages": [*request["messages"][:-1], last]}
    return {**request, "query": request["query"] + " please"}


def _write_trace(path: Path, calls: list[tuple[str, str, dict[str, Any]]]) -> None:
    writer = TraceWriter(path, new_header({"bench": "matching"}))
    try:
        for seq, (kind, name, request) in enumerate(calls):
            writer.write(Event(seq, kind, name, fingerprint(request), request, {"ok": seq}, live=True))
    finally:
        writer.close()


def _incoming(calls: list[tuple[str, str, dict[str, Any]]]) -> list[IncomingCall]:
    return [IncomingCall(kind, name, fingerprint(request), request, request) for kind, name, request in calls]


# -- measuring ------------------------------------------------------------------------
def _time_per_call(
    trace_path: Path, make: Callable[[], Any], incoming: list[IncomingCall], repeat: int
) -> float:
    """Best of ``repeat`` full passes, in µs per call; a fresh lazy trace each pass (cold bodies)."""
    best = float("inf")
    for _ in range(repeat):
        trace = Trace.open(trace_path)
        matcher = make()
        matcher.start(trace)
        match = matcher.match
        started = time.process_time()
        for cursor, call in enumerate(incoming):
            match(cursor, call, trace)
        best = min(best, (time.process_time() - started) / len(incoming))
    return best * 1e6


def measure(events: int = EVENTS, repeat: int = 3) -> list[Result]:
    calls = _requests(events)
    exact = _incoming(calls)
    drifted = _incoming([(kind, name, _drift(request)) for kind, name, request in calls])
    shuffled = list(exact)
    # Concurrent agents: calls arrive near, not at, their recorded position.
    rng = random.Random(3)
    for start in range(0, len(shuffled), 8):
        block = shuffled[start : start + 8]
        rng.shuffle(block)
        shuffled[start : start + 8] = block
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as folder:
        path = Path(folder) / "bench.rewind"
        _write_trace(path, calls)
        floor = _time_per_call(path, _Floor, exact, repeat)
        cases: list[tuple[str, Callable[[], Any], list[IncomingCall], float]] = [
            ("strict", StrictMatcher, exact, 10.0),
            ("ordered", OrderedMatcher, exact, 10.0),
            ("parallel, recorded order", ParallelMatcher, exact, 10.0),
            ("parallel, shuffled arrivals", ParallelMatcher, shuffled, 10.0),
            ("fuzzy, exact requests", FuzzyMatcher, exact, 1000.0),
            ("fuzzy lexical, drifted requests", FuzzyMatcher, drifted, 1000.0),
        ]
        for name, make, incoming, budget in cases:
            if name.startswith("fuzzy lexical"):
                import warnings

                from rewind.errors import FuzzyMatchWarning

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FuzzyMatchWarning)
                    cost = _time_per_call(path, make, incoming, repeat)
            else:
                cost = _time_per_call(path, make, incoming, repeat)
            results.append(Result(name, cost, floor, budget))
    return results


def _format(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.2f} µs"


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit status 1 when a strategy is over its budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv if argv is not None else [])  # callable from an aggregate runner
    results = measure(args.events, args.repeat)
    print(f"matcher CPU time per call, {args.events:,}-event trace opened lazily, best of {args.repeat}")
    print(f"  {'strategy':<34}{'per call':>12}{'floor':>12}{'budget':>12}")
    for result in results:
        verdict = "ok" if result.ok else "OVER BUDGET"
        print(
            f"  {result.name:<34}{_format(result.per_call_us):>12}{_format(result.floor_us):>12}"
            f"{_format(result.budget_us):>12}  {verdict}"
        )
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
