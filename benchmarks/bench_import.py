"""``rewind import`` of a large OTLP JSON file, against parsing that file.

    python benchmarks/bench_import.py [--spans N] [--rounds R]

The source: a run of ``--spans`` small tool steps (default 100,000; the writer's own
layout, as ``bench_trace_io`` writes it) exported by ``rewind export`` as OTLP JSON lines
(one ``ExportTraceServiceRequest`` per line, the Collector ``file`` exporter's format), so
every span carries its step whole and the import rebuilds each one. Each side runs in a
fresh process, so its peak resident memory is its own:

* floor: read the file and ``json.loads`` every line, keeping the values (what any
  reader of the file must at least do);
* import: ``rewind.import_telemetry(source, output)``, the trace written.

Reported: CPU time of each (best of ``--rounds``), target (issue 34) within 3x of the
floor; and peak resident memory of each above the interpreter's own, against the file
size (informational: the target is memory bounded by the largest run, not the file).
The readers' size bounds are raised for the import (``_LIMITS``): the default ones refuse
a file this big, as they would for a user.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _common as c
from bench_trace_io import write_small_trace

IMPORT_TARGET = 3.0

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
rewind.import_telemetry(sys.argv[1], sys.argv[2])
elapsed = time.process_time() - start
print(json.dumps([elapsed, peak() - before]))
"""


# A 100,000-span export in rewind's own layout is ~150 MB: over the readers' default
# bounds (64 MiB a file, 2,000,000 decoded items), which a user importing it raises too.
_LIMITS = {"REWIND_MAX_ARCHIVE_BYTES": str(2**31), "REWIND_IMPORT_MAX_ITEMS": str(10**9)}


def _run(script: str, *args: str) -> tuple[float, int]:
    env = {**os.environ, **_LIMITS}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"bench_import: a measure failed:\n{done.stderr[-2000:]}")
    seconds, kib = json.loads(done.stdout.strip().splitlines()[-1])
    return float(seconds), int(kib)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from rewind.importing.export import export_trace

    report = c.Reporter("import", f"rewind import of a {args.spans:,}-span OTLP JSON file")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        trace, source, output = Path(tmp) / "run.rewind", Path(tmp) / "spans.jsonl", Path(tmp) / "imported.rewind"
        write_small_trace(trace, args.spans - 1)  # one span per step, plus the run's own
        export_trace(trace, source)
        size = source.stat().st_size
        parse, imported = (float("inf"), 0), (float("inf"), 0)
        for _ in range(args.rounds):  # alternate, so both sides see the same machine load
            parse = min(parse, _run(_PARSE, str(source)))
            imported = min(imported, _run(_IMPORT, str(source), str(output)))
        report.add(
            c.Result(
                "import",
                "rewind import (trace written)",
                imported[0],
                "s",
                floor=parse[0],
                floor_name="json.loads of every line",
                target=IMPORT_TARGET,
                goal="max",
                target_on="ratio",
            )
        )
        report.note(
            f"peak memory above the interpreter: import {imported[1] / 1024:.0f} MiB, "
            f"parse {parse[1] / 1024:.0f} MiB, file {size / 2**20:.0f} MiB"
        )
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(main())
