"""``rewind import`` of large OTLP JSON files, against parsing them: time and memory.

    python benchmarks/bench_import.py [--spans N] [--runs R] [--rounds K]

Two sources, each ``--spans`` small tool steps (default 100,000; the writer's own layout,
as ``bench_trace_io`` writes it) exported by ``rewind export`` as OTLP JSON lines (one
``ExportTraceServiceRequest`` per line, the Collector ``file`` exporter's format), so every
span carries its step whole and the import rebuilds each one:

* one run of all the spans (``rewind import FILE``: read once, the run kept as it goes);
* ``--runs`` runs (default 10) of ``spans / runs`` each, their lines interleaved as a
  collector batches them; imported with ``--trace-id`` of one run (one pass), and, in a
  copy where the other runs are plain application spans, without it (a first pass of
  per-trace summaries, then a second keeping the run).

Each side runs in a fresh process, so its peak resident memory is its own. Floors:

* ``json.loads`` of every line of the file, the values kept (what any reader holding
  the file must at least do): the time floor (target, issue 34: within 3x), and the
  whole-file memory the import must stay far below when the file holds many runs;
* the run alone: the same run's lines in a file of their own, parsed and imported, so
  "memory bounded by the largest run, not the file" reads as: importing one run of ten
  costs what importing that run alone does.

The readers' default bounds apply per line and per run for these files (see
docs/importing.md, "Limits"): the import runs with the defaults, as a user's would.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import _common as c
from bench_trace_io import write_small_trace

IMPORT_TARGET = 3.0
#: One run of many imports within this much of that run imported alone (bounded by the run).
MEMORY_TARGET = 1.25

# Each measure prints its CPU seconds and its peak RSS growth (KiB) as JSON. The peak is
# the kernel's VmHWM of this process: ru_maxrss would carry over the parent's from the fork.
_PEAK = """
def peak():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
"""
_PARSE = _PEAK + """
import json, sys, time
before = peak()
start = time.process_time()
with open(sys.argv[1], "rb") as fh:
    values = [json.loads(line) for line in fh]
elapsed = time.process_time() - start
print(json.dumps([elapsed, peak() - before]))
"""
_IMPORT = _PEAK + """
import json, sys, time
import rewind
before = peak()
start = time.process_time()
rewind.import_telemetry(sys.argv[1], sys.argv[2], trace_id=sys.argv[3] or None)
elapsed = time.process_time() - start
print(json.dumps([elapsed, peak() - before]))
"""

#: Attribute keys that make a span a GenAI step, renamed to make the other runs plain spans.
_PLAIN = (
    (b'"key": "gen_ai.operation.name"', b'"key": "app.operation.name"'),
    (b'"key": "rewind.kind"', b'"key": "app.kind"'),
)


def _run(script: str, *args: str) -> tuple[float, int]:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_import: a measure failed:\n{done.stderr[-2000:]}")
    seconds, kib = json.loads(done.stdout.strip().splitlines()[-1])
    return float(seconds), int(kib)


def _export_run(folder: Path, name: str, spans: int) -> tuple[Path, str]:
    from rewind.importing.export import export_trace

    trace, source = folder / f"{name}.rewind", folder / f"{name}.jsonl"
    write_small_trace(trace, spans - 1)  # one span per step, plus the run's own
    report = export_trace(trace, source)
    trace.unlink()
    return source, report.trace_id


def _interleave(sources: list[Path], target: Path, plain: frozenset[int] = frozenset()) -> None:
    """The runs' lines taken in turn, as a collector writes batches of concurrent runs."""
    lines = [path.read_bytes().splitlines(keepends=True) for path in sources]
    with open(target, "wb") as out:
        for row in range(max(len(run) for run in lines)):
            for index, run in enumerate(lines):
                if row < len(run):
                    line = run[row]
                    if index in plain:
                        for key, other in _PLAIN:
                            line = line.replace(key, other)
                    out.write(line)


class _Best:
    """The best (least) CPU time and peak memory (MiB) of one measure over the rounds."""

    def __init__(self, script: str, *args: str) -> None:
        self.script, self.args = script, args
        self.seconds, self.peak = float("inf"), float("inf")

    def measure(self) -> None:
        seconds, kib = _run(self.script, *self.args)
        self.seconds = min(self.seconds, seconds)
        self.peak = min(self.peak, kib / 1024)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    report = c.Reporter("import", f"rewind import of {args.spans:,}-span OTLP JSON files")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        folder = Path(tmp)
        output = str(folder / "imported.rewind")
        one, _ = _export_run(folder, "one", args.spans)
        runs = [_export_run(folder, f"run{k}", args.spans // args.runs) for k in range(args.runs)]
        chosen = args.runs * 2 // 3  # neither first nor last
        alone, chosen_id = runs[chosen]
        many, mixed = folder / "many.jsonl", folder / "mixed.jsonl"
        _interleave([path for path, _ in runs], many)
        _interleave([path for path, _ in runs], mixed, plain=frozenset(range(args.runs)) - {chosen})
        measures = {
            "one.parse": _Best(_PARSE, str(one)),
            "one.import": _Best(_IMPORT, str(one), output, ""),
            "many.parse": _Best(_PARSE, str(many)),
            "many.import": _Best(_IMPORT, str(many), output, chosen_id),
            "mixed.import": _Best(_IMPORT, str(mixed), output, ""),
            "alone.parse": _Best(_PARSE, str(alone)),
            "alone.import": _Best(_IMPORT, str(alone), output, ""),
        }
        for _ in range(args.rounds):  # alternate, so every measure sees the same machine load
            for measure in measures.values():
                measure.measure()
        m = {name: measure for name, measure in measures.items()}
        size = {name: path.stat().st_size for name, path in (("one", one), ("many", many), ("alone", alone))}
        per_run = args.spans // args.runs
        time_results = [
            ("one", "one.import", "one run: rewind import (trace written)"),
            ("many", "many.import", f"1 of {args.runs} runs, --trace-id (one pass)"),
            ("many", "mixed.import", f"1 of {args.runs} runs, no --trace-id (two passes)"),
        ]
        for file, key, name in time_results:
            report.add(
                c.Result(
                    "import",
                    name,
                    m[key].seconds,
                    "s",
                    floor=m[f"{file}.parse"].seconds,
                    floor_name="json.loads of every line",
                    target=IMPORT_TARGET,
                    goal="max",
                    target_on="ratio",
                )
            )
        report.add(
            c.Result(
                "import",
                "one run: peak memory",
                m["one.import"].peak,
                "MiB",
                floor=m["one.parse"].peak,
                floor_name="json.loads of every line, kept",
                target_on="ratio",
                note=f"the file: {size['one'] / 2**20:.0f} MiB",
            )
        )
        for key, name in (("many.import", "--trace-id"), ("mixed.import", "no --trace-id")):
            report.add(
                c.Result(
                    "import",
                    f"1 of {args.runs} runs, {name}: peak memory",
                    m[key].peak,
                    "MiB",
                    floor=m["alone.import"].peak,
                    floor_name=f"importing the run alone ({per_run:,} spans)",
                    target=MEMORY_TARGET,
                    goal="max",
                    target_on="ratio",
                    note=f"{m[key].peak / m['many.parse'].peak:.2f}x the whole-file parse "
                    f"({m['many.parse'].peak:.0f} MiB)",
                )
            )
        report.note(
            f"files: one run {size['one'] / 2**20:.0f} MiB, {args.runs} runs {size['many'] / 2**20:.0f} MiB, "
            f"the run alone {size['alone'] / 2**20:.1f} MiB; the run alone: parse {m['alone.parse'].seconds:.2f} s "
            f"{m['alone.parse'].peak:.0f} MiB, import {m['alone.import'].seconds:.2f} s "
            f"{m['alone.import'].peak:.0f} MiB"
        )
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(main())
