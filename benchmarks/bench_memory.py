"""Replay memory: peak RSS of replaying 200 events of 1 MB each.

    python benchmarks/bench_memory.py [--events N] [--size BYTES]

A tool returns a different 1 MB document at each of 200 steps; the run is recorded
once (a ~200 MB v1 trace, every payload inline, and a v2 copy with the documents
externalized), then each measurement runs in a fresh process so its peak resident
set size (``VmHWM`` on Linux) is its own:

* replay: the agent loop replays all 200 steps (``Trace.open`` reads one event's
  body at a time and keeps none of them);
* floor: a process that imports rewind and opens the same trace without replaying,
  which is what any replay costs before its first step;
* for contrast, ``Trace.load`` of the same trace (every body in memory).

Target: the replay of the v1 trace peaks under 100 MB RSS.
"""

from __future__ import annotations

import argparse
import base64
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import _common as c

TARGET_BYTES = 100e6
HERE = Path(__file__).resolve()


def document(index: int, size: int) -> str:
    """An incompressible ``size``-character document, different at every step."""
    raw = random.Random(index).randbytes(size * 3 // 4 + 3)
    return base64.b64encode(raw).decode()[:size]


def _child(mode: str, path: str, events: int, size: int) -> None:
    """What runs in the measured process; prints its peak RSS in bytes."""
    import rewind
    from rewind.storage.trace import Trace

    @rewind.tool(name="read_document")
    def read_document(index: int) -> str:
        raise AssertionError("a replay never calls the live tool")

    if mode == "replay":
        with rewind.replay(path, require_full_consumption=True):
            for index in range(events):
                if len(read_document(index)) != size:
                    raise AssertionError("wrong document served")
    elif mode == "open":
        Trace.open(path)
    elif mode == "load":
        Trace.load(path)
    print(_peak_rss())


def _peak_rss() -> int:
    """This process's peak resident set size, in bytes.

    Linux's ``VmHWM`` belongs to the process image: ``ru_maxrss`` would also count the
    parent's memory, which the child inherits for an instant before ``exec``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _measure(mode: str, path: Path, events: int, size: int) -> float:
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", mode, str(path), "--events", str(events), "--size", str(size)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _record(path: Path, events: int, size: int, externalize: int | None) -> None:
    import rewind

    @rewind.tool(name="read_document")
    def read_document(index: int) -> str:
        return document(index, size)

    with rewind.record(path, externalize=externalize):
        for index in range(events):
            read_document(index)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], args.events, args.size)
        return 0

    report = c.Reporter("memory", f"replay memory: {args.events} events of {c.fmt(args.size, 'B')} each")
    with tempfile.TemporaryDirectory(prefix="rewind-bench-") as tmp:
        inline, external = Path(tmp) / "docs.rewind", Path(tmp) / "docs-v2.rewind"
        _record(inline, args.events, args.size, None)
        _record(external, args.events, args.size, 64_000)
        size = inline.stat().st_size
        floor = _measure("open", inline, args.events, args.size)
        replay = _measure("replay", inline, args.events, args.size)
        replay_v2 = _measure("replay", external, args.events, args.size)
        floor_v2 = _measure("open", external, args.events, args.size)
        eager = _measure("load", inline, args.events, args.size)

    report.add(
        c.Result(
            "memory",
            f"peak RSS, replay of v1 trace ({c.fmt(size, 'B')})",
            replay,
            "B",
            floor=floor,
            floor_name="import rewind + Trace.open",
            target=TARGET_BYTES,
            goal="max",
            note=f"{c.fmt_delta(replay - floor, 'B')} over the floor",
        )
    )
    report.add(
        c.Result(
            "memory",
            "peak RSS, replay of the v2 (blobs) trace",
            replay_v2,
            "B",
            floor=floor_v2,
            floor_name="import rewind + Trace.open",
            note=f"{c.fmt_delta(replay_v2 - floor_v2, 'B')} over the floor",
        )
    )
    report.add(c.Result("memory", "peak RSS, Trace.load of the v1 trace (contrast)", eager, "B"))
    return report.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
