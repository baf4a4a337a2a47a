"""Measurement and reporting helpers shared by the benchmark modules.

Every figure is printed beside a floor measured in the same process, in the same
run: a number from another day or machine says little, a ratio to "just reading the
file" on this machine, right now, says a lot.

Times are CPU time of this process (``time.process_time``: user + system), so other
programs competing for the cores slow a measurement less than they would wall time.
Each measurement is repeated; the best (lowest) round is reported, because noise
only ever adds time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

#: Set by ``benchmarks/run.py``: each module appends its results here as JSON lines.
RESULTS_ENV = "REWIND_BENCH_RESULTS"


def cpu_time(fn: Callable[[], Any]) -> float:
    """CPU seconds ``fn()`` took."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def best_of(rounds: int, *measures: Callable[[], float]) -> list[float]:
    """Run the measures in turn, ``rounds`` times, and keep each one's best.

    Interleaving keeps a floor and its subject under the same machine conditions.
    """
    best = [float("inf")] * len(measures)
    for _ in range(rounds):
        for index, measure in enumerate(measures):
            best[index] = min(best[index], measure())
    return best


def read_and_split(path: Path) -> Callable[[], float]:
    """The floor of opening a trace: read the file and split it into lines."""

    def measure() -> float:
        start = time.process_time()
        with open(path, "rb") as fh:
            fh.read().splitlines()
        return time.process_time() - start

    return measure


def read_and_parse(path: Path) -> Callable[[], float]:
    """The raw floor of any full read: read the file and ``json.loads`` every line."""

    def measure() -> float:
        start = time.process_time()
        with open(path, "rb") as fh:
            for line in fh.read().splitlines():
                json.loads(line)
        return time.process_time() - start

    return measure


def read_and_orjson(path: Path, *, gc_paused: bool = False) -> Callable[[], float]:
    """The floor of an eager load: read the file and ``orjson.loads`` every line, keeping
    the values (what a Python reader building the same values must at least do).

    ``gc_paused``: with the cyclic collector paused as ``Trace.load`` pauses it
    (``rewind._gc_pause``), a reference for how much of the floor is the collector's."""
    import contextlib

    import orjson

    from rewind.data import gc_pause as _gc_pause

    def measure() -> float:
        start = time.process_time()
        with open(path, "rb") as fh, _gc_pause.paused() if gc_paused else contextlib.nullcontext():
            values = [orjson.loads(line) for line in fh.read().splitlines()]
        elapsed = time.process_time() - start
        del values  # freeing them is not part of reading them
        return elapsed

    return measure


@dataclass
class Result:
    """One reported figure: measured value, its floor, and the target it must meet."""

    module: str
    name: str
    value: float
    unit: str
    floor: float | None = None
    floor_name: str = ""
    #: How the floor is introduced ("floor", or "reference" for a yardstick that is not a minimum).
    floor_label: str = "floor"
    target: float | None = None
    #: "max": value must be <= target; "min": value must be >= target; "" : informational.
    goal: str = ""
    #: What the target applies to when it is not the value itself: "ratio".
    target_on: str = "value"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.floor in (None, 0):
            return None
        return self.value / self.floor  # type: ignore[operator]

    @property
    def met(self) -> bool | None:
        if self.target is None or not self.goal:
            return None
        subject = self.ratio if self.target_on == "ratio" else self.value
        if subject is None:
            return None
        return subject <= self.target if self.goal == "max" else subject >= self.target


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "us":
        return f"{value:.1f} µs"
    if unit == "B":
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
            if value >= scale:
                return f"{value / scale:.1f} {name}"
        return f"{value:.0f} B"
    if unit == "x":
        return f"{value:.1f}x"
    return f"{value:.3g} {unit}".strip()


class Reporter:
    """Prints results as they come and hands them to the runner."""

    def __init__(self, module: str, title: str) -> None:
        self.module = module
        self.results: list[Result] = []
        print(f"\n== {title} ==", flush=True)

    def add(self, result: Result) -> Result:
        self.results.append(result)
        print(describe(result), flush=True)
        target = os.environ.get(RESULTS_ENV)
        if target:
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(result)) + "\n")
        return result

    def note(self, text: str) -> None:
        print(f"   {text}", flush=True)

    def exit_code(self) -> int:
        """1 when any target was missed (what ``main()`` returns)."""
        return 1 if any(r.met is False for r in self.results) else 0


def describe(result: Result) -> str:
    parts = [f"{result.name:<44} {fmt(result.value, result.unit):>10}"]
    if result.floor is not None:
        floor = fmt(result.floor, result.unit)
        parts.append(f"{result.floor_label} {floor:>9} ({result.floor_name})")
        if result.ratio is not None and result.target_on == "ratio":
            parts.append(f"ratio {result.ratio:.2f}x")
    if result.target is not None and result.goal:
        sign = "<=" if result.goal == "max" else ">="
        shown = f"{result.target:g}x" if result.target_on == "ratio" else fmt(result.target, result.unit)
        parts.append(f"target {sign} {shown}: {'PASS' if result.met else 'MISS'}")
    if result.note:
        parts.append(result.note)
    return "  ".join(parts)


def fmt_delta(value: float, unit: str) -> str:
    """A signed difference, e.g. ``+1.9 MB`` or ``-20.5 KB``."""
    return ("-" if value < 0 else "+") + fmt(abs(value), unit)


def bare_spans(count: int) -> Callable[[], float]:
    """A floor for the span per call the design asks for: start and end ``count`` spans
    with a comparable set of attributes on rewind's own tracer, with no session."""
    from opentelemetry.trace import SpanKind

    from rewind.engine.telemetry import TRACERS

    attributes = {
        "gen_ai.operation.name": "chat",
        "rewind.kind": "llm",
        "rewind.name": "chat",
        "rewind.fingerprint": "0" * 64,
        "rewind.mode": "record",
        "gen_ai.request.model": "gpt-4o-mini",
    }

    def measure() -> float:
        tracer = TRACERS.tracer()
        start = time.process_time()
        for seq in range(count):
            span = tracer.start_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes)
            span.set_attributes({"rewind.seq": seq})
            span.end()
        return time.process_time() - start

    return measure
