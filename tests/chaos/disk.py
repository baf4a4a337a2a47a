"""A full disk: ENOSPC at random writes. Nothing that was not fully written is ever served,
every step lost to the disk is told to the agent, and the file never keeps a partial line.

As root the trace lives on a small tmpfs whose free space a filler file moves before every
call (some lines fit, some fit in part, some not at all): the kernel's own ENOSPC. Without
the right to mount, ``os.write`` on the trace's descriptor is replaced by one that writes a
random prefix and then raises ENOSPC at random calls: the same short write the kernel does.
"""

from __future__ import annotations

import errno
import os
import random
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rewind
from rewind.errors import TraceWriteError
from rewind.storage import trace_file as _trace_file

CALLS = 400


@rewind.tool(name="write")
def write(n: int, size: int) -> dict[str, Any]:
    return {"n": n, "blob": "d" * size}


@contextmanager
def _tmpfs(folder: Path) -> Iterator[bool]:
    folder.mkdir()
    mounted = (
        not os.environ.get("REWIND_CHAOS_NO_TMPFS")
        and os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _set_free(folder: Path, filler: Path, free: int) -> None:
    """Grow or shrink the filler so about ``free`` bytes stay free on the tmpfs."""
    stats = os.statvfs(folder)
    now_free = stats.f_bavail * stats.f_frsize
    size = filler.stat().st_size if filler.exists() else 0
    target = max(0, size + now_free - free)
    with open(filler, "ab") as fh:
        fh.truncate(target)
        if target > size:
            try:
                os.posix_fallocate(fh.fileno(), 0, target)
            except OSError:
                pass


@contextmanager
def _injected_faults(rng: random.Random, folder: Path) -> Iterator[None]:
    real_write = os.write

    def write_or_fail(fd: int, data: Any) -> int:
        try:
            inside = os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder))
        except OSError:
            inside = False
        if inside and rng.random() < 0.3:
            cut = rng.randrange(len(data) + 1) if len(data) else 0
            if cut and rng.random() < 0.5:
                return real_write(fd, bytes(data)[:cut])  # a short write; the next one fails
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    _trace_file.os.write = write_or_fail  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _trace_file.os.write = real_write  # type: ignore[attr-defined]


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    folder = work / "disk"
    acknowledged: dict[int, dict[str, Any]] = {}
    told: set[int] = set()
    sizes: dict[int, int] = {}
    other_errors = 0
    with _tmpfs(folder) as mounted:
        path = folder / "run.rewind"
        filler = folder / "filler"
        faults = _injected_faults(rng, folder) if not mounted else _nothing()
        with faults, rewind.record(path) as session:
            for n in range(CALLS):
                size = sizes[n] = rng.randrange(200, 6000)
                if mounted:
                    _set_free(folder, filler, rng.choice([0, 1024, 4096, 8192, 65536]))
                try:
                    acknowledged[n] = write(n, size)
                except TraceWriteError as exc:
                    told.add(exc.step if isinstance(exc.step, int) else n)
                except Exception:
                    other_errors += 1
            steps = {event.seq: event for event in session.new_events}
        if filler.exists():
            filler.unlink()
        raw = path.read_bytes()
        trace = rewind.Trace.load(path)
        on_disk = {event.seq: event.response for event in trace.events}
        # A replay serves what was written and refuses what was not (by identity, any order).
        served_unwritten = 0
        with rewind.replay(path, match="parallel"):
            for n in sorted(told):
                try:
                    write(n, sizes[n])
                    served_unwritten += 1
                except rewind.DivergenceError:
                    pass
            replayed_lost = sum(1 for n, r in acknowledged.items() if write(n, sizes[n]) != r)
    partial = int(trace.torn_tail) + int(bool(raw) and not raw.endswith(b"\n"))
    return {
        "method": "tmpfs (kernel ENOSPC)" if mounted else "os.write fault injection",
        "calls": CALLS,
        "write_faults": len(told) + other_errors,
        "acknowledged": len(acknowledged),
        "acknowledged_lost": sum(1 for n, r in acknowledged.items() if on_disk.get(n) != r) + replayed_lost,
        "agent_not_told": sum(1 for n in range(CALLS) if n not in on_disk and n not in told) + other_errors,
        "unwritten_steps_served": sum(1 for n in told if n in on_disk or n in steps) + served_unwritten,
        "partial_lines_left": partial,
    }


@contextmanager
def _nothing() -> Iterator[None]:
    yield
