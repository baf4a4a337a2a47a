"""Compaction: how much ``rewind compact`` shrinks a repeated-history trace.

    python benchmarks/bench_compact.py [--calls N] [--rounds R]

The standard long run (5,000 chat calls, each re-sending a sliding window of the
conversation: ~22 MB) is archived with ``rewind.archive.compact`` (what
``rewind compact`` does: gzip level 6 over the file's bytes).

Target: the archive is at least 10x smaller. Beside it, as a reference, the best
ratio deflate reaches on the same bytes (level 9, in memory). The time to compact,
and to open the archive (eager: gzip has no random access) against opening the
uncompressed trace, are reported too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import zlib
from pathlib import Path

import _common as c
import _workload as w

from rewind.storage.archive import compact
from rewind.storage.trace import Trace

TARGET_RATIO = 10.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=w.CALLS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    report = c.Reporter("compact", f"compaction of a {args.calls:,}-call repeated-history trace")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        path = Path(tmp) / "run.rewind"
        w.record_chat_run(path, w.chat_requests(args.calls))
        raw = path.read_bytes()
        archive = Path(tmp) / "run.rewind.gz"

        def compacting() -> float:
            start = time.process_time()
            compact(path, archive)
            return time.process_time() - start

        def opening(target: Path) -> c.Callable[[], float]:
            def measure() -> float:
                start = time.process_time()
                Trace.open(target)
                return time.process_time() - start

            return measure

        (compact_s,) = c.best_of(args.rounds, compacting)
        open_gz_s, open_s = c.best_of(args.rounds, opening(archive), opening(path))
        size, packed = len(raw), archive.stat().st_size
        best = len(zlib.compress(raw, 9))

    report.add(
        c.Result(
            "compact",
            f"compaction ratio ({c.fmt(size, 'B')} -> {c.fmt(packed, 'B')})",
            size / packed,
            "x",
            floor=size / best,
            floor_name="deflate level 9, in memory",
            floor_label="reference",
            target=TARGET_RATIO,
            goal="min",
        )
    )
    report.add(c.Result("compact", "time to compact", compact_s, "s", note=f"{size / compact_s / 1e6:.0f} MB/s"))
    report.add(
        c.Result(
            "compact",
            "Trace.open of the archive (eager)",
            open_gz_s,
            "s",
            floor=open_s,
            floor_name="Trace.open of the plain trace",
            note=f"{open_gz_s / open_s:.1f}x",
        )
    )
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
