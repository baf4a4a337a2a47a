"""``rewind import`` fed the telemetry of issue 36: decoding bombs, a parent chain 40,000
deep, joined runs, numbers past every range, and a Phoenix server on loopback that pages
forever, trickles, redirects off its host or crowds one page.

The files and servers are ``tests/hostile/telemetry.py`` and ``tests/hostile/servers.py``,
the ones ``tests/importing/test_hostile_import.py`` and ``tests/importing/test_hostile_phoenix.py`` use. Each
import runs as ``rewind import`` in a process capped at 1 GiB of address space
(``tests/hostile/bounded.py``); for each case the suite prints its exit status, wall time
and the process's peak resident memory, and whether what it wrote reads back as a trace
with its steps numbered 0, 1, 2, ...
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hostile import telemetry  # tests/hostile/: the inputs and the bounded runner tests use
from hostile.bounded import DEFAULT_MEMORY, address_space_limit, rewind_command
from hostile.servers import HostileServer

from rewind.engine import network_guard
from rewind.errors import RewindError
from rewind.importing import TelemetryError
from rewind.importing.phoenix import read_phoenix
from rewind.storage.trace import Trace

#: Each import's own time limit: a case that outlives it is reported "killed", a FAIL.
CASE_TIMEOUT = 60.0


def measured_import(source: str, out: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``rewind import SOURCE -o OUT EXTRA``: its exit status, seconds and peak RSS (MiB).

    ``os.wait4`` reaps the child with its own resource usage, so each case's peak is its
    own, not the largest of every child this process ever waited for."""
    started = time.monotonic()
    with open(out.with_suffix(".output"), "w+") as output:
        process = subprocess.Popen(
            rewind_command("import", source, "-o", str(out), *extra),
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=address_space_limit(DEFAULT_MEMORY),
            env={**os.environ, **(env or {})},
        )
        status: int | str
        while True:
            pid, wait_status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(wait_status)
                break
            if time.monotonic() - started > CASE_TIMEOUT:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                status = f"killed after {CASE_TIMEOUT:.0f} s"
                break
            time.sleep(0.02)
        process.returncode = status if isinstance(status, int) else -9  # reaped: Popen must not wait again
        output.seek(0)
        text = output.read()
    if "Traceback" in text:
        print(f"   hostile_import: {source}: {text[-600:]}", file=sys.stderr)
    return {"status": status, "seconds": round(time.monotonic() - started, 2), "peak_mib": usage.ru_maxrss / 1024}


def _numbered(out: Path) -> int:
    """1 when ``out`` reads back as a trace whose steps are numbered 0, 1, 2, ...; else 0."""
    try:
        seqs = [event.seq for event in Trace.load(out)]
    except (OSError, RewindError):
        return 0
    return int(bool(seqs) and seqs == list(range(len(seqs))))


#: case -> (build the file, extra arguments): each file through ``rewind import``.
FILES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "zero_bytes_gzip": (telemetry.zero_bytes_gzip, ()),
    "empty_spans": (telemetry.empty_spans_protobuf, ()),
    "empty_attributes": (telemetry.empty_attributes_json, ()),
    "chain_40k": (lambda folder: telemetry.deep_chain(folder, 40_000), ()),
    "two_runs_joined": (telemetry.two_recorded_runs, ("--trace-id", "all")),
    "huge_seq": (telemetry.huge_seq, ()),
    **{
        f"huge_{where}": (lambda folder, where=where: telemetry.huge_numbers(folder, where), ())  # type: ignore[misc]
        for where in ("start_float", "start_digits", "int_float", "int_digits")
    },
}

#: The files whose import must write a trace (the others are refused, nothing written).
WRITTEN = {"chain_40k", "two_runs_joined", "huge_seq", *(case for case in FILES if case.startswith("huge_"))}


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for case, (build, extra) in FILES.items():
        folder = work / case
        folder.mkdir()
        out = folder / "x.rewind"
        figures.update({f"{case}.{k}": v for k, v in measured_import(str(build(folder)), out, *extra).items()})
        if case in WRITTEN:
            figures[f"{case}.readable"] = _numbered(out)
        else:
            figures[f"{case}.nothing_written"] = int(not out.exists())
    figures.update(_phoenix(work))
    return figures


def _phoenix(work: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for behaviour, env, spans in [
        ("endless", {}, 0),
        ("trickle", {"REWIND_IMPORT_TIMEOUT": "3"}, 0),
        ("crowded", {"REWIND_IMPORT_MAX_SPANS": "1000"}, 5000),
    ]:
        folder = work / f"phoenix_{behaviour}"
        folder.mkdir()
        with HostileServer(behaviour, spans=spans) as server:
            done = measured_import(server.url, folder / "x.rewind", env=env)
        figures.update({f"phoenix_{behaviour}.{k}": v for k, v in done.items()})
        figures[f"phoenix_{behaviour}.requests"] = server.requests
    # A redirect off the named host: run in this process under the network guard, so a
    # client that followed it would be stopped before any packet (and counted).
    started = time.monotonic()
    hold = network_guard.block("the chaos suite's redirect case")
    try:
        with HostileServer("redirect") as server:
            read_phoenix(server.url, timeout=20)
        refused = 0
    except TelemetryError as exc:
        refused = int("redirected to http://203.0.113.7" in str(exc))
    finally:
        hold.release()
    figures["phoenix_redirect.refused"] = refused
    figures["phoenix_redirect.connections_off_host"] = len(hold.blocked)
    figures["phoenix_redirect.seconds"] = round(time.monotonic() - started, 2)
    return figures
