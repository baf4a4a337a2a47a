"""A thousand mutated traces through every reader: ``Trace.open``/``Trace.load``, a strict
replay of decorated calls and of an OpenAI stream, and the commands ``show``, ``stats``,
``diff``, ``report``, ``check`` and ``import``. No hang, no traceback, output inert,
memory bounded.

The mutator is the one ``tests/storage/test_trace_fuzz.py`` uses (flipped and inserted bytes,
torn and shuffled lines, pathological JSON values, forged blob references, gzip bombs);
the recordings it damages here also hold an OpenAI streaming step, recorded against the
stub server (the "stream" field was where a damaged step still reached a traceback).
"""

from __future__ import annotations

import faulthandler
import os
import random
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import rewind
from rewind.cli import cli
from rewind.errors import RewindError, RewindWarning
from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "storage"))
import test_trace_fuzz as mutator  # tests/storage/test_trace_fuzz.py: the mutator and the decorated agent

TRACES = int(os.environ.get("REWIND_CHAOS_FUZZ_TRACES", "1008"))
CASE_SECONDS = 10.0
SMALL_LIMIT = 4 << 20
MESSAGES = [{"role": "user", "content": "stream me a plan"}]


def _stream(client: Any) -> None:
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True):
        pass


def _agent(client: Any) -> None:
    mutator.agent()
    _stream(client)


def _originals(work: Path, client: Any) -> dict[str, tuple[bytes, dict[str, bytes]]]:
    found: dict[str, tuple[bytes, dict[str, bytes]]] = {}
    for name, externalize in (("v1", None), ("v2", 512)):
        path = work / f"{name}.rewind"
        with rewind.record(path, meta={"run": name}, externalize=externalize):
            _agent(client)
        folder = Path(f"{path}.blobs")
        blobs = {p.name: p.read_bytes() for p in folder.iterdir()} if folder.is_dir() else {}
        found[name] = (path.read_bytes(), blobs)
    return found


class Tally:
    def __init__(self) -> None:
        self.tracebacks = 0
        self.unsafe = 0
        self.examples: list[str] = []

    def bad(self, kind: str, where: str, detail: str) -> None:
        if kind == "traceback":
            self.tracebacks += 1
        else:
            self.unsafe += 1
        if len(self.examples) < 5:
            self.examples.append(f"{where}: {detail[:300]}")


def _documented(tally: Tally, where: str, fn: Any) -> None:
    try:
        fn()
    except RewindError:
        pass
    except Exception as exc:
        tally.bad("traceback", where, repr(exc))


def _cli(tally: Tally, where: str, *args: object) -> None:
    result = CliRunner().invoke(cli, ["--no-pager", "--color", "always", *map(str, args)])
    output = result.output
    if result.exit_code not in (0, 1, 2) or "Traceback" in output or "internal error" in output:
        tally.bad("traceback", where, f"rewind {args[0]}: exit {result.exit_code} {output[-300:]}")
    elif result.exception is not None and not isinstance(result.exception, SystemExit):
        tally.bad("traceback", where, f"rewind {args[0]} raised {result.exception!r}")
    bad = mutator._UNSAFE.search(mutator._OUR_SGR.sub("", output))
    if bad is not None:
        tally.bad("unsafe", where, f"rewind {args[0]} printed {bad.group()!r}")


def _exercise(tally: Tally, where: str, path: Path, original: Path, work: Path, client: Any) -> None:
    _documented(tally, where + " Trace.load", lambda: mutator.touch_everything(rewind.Trace.load(path)))
    _documented(tally, where + " Trace.open", lambda: mutator.touch_everything(rewind.Trace.open(path)))

    def replay() -> None:
        with rewind.replay(path):
            _agent(client)

    _documented(tally, where + " replay", replay)
    _cli(tally, where, "show", "-v", path)
    _cli(tally, where, "stats", path)
    _cli(tally, where, "diff", original, path)
    _cli(tally, where, "report", path, "-o", work / "report.html")
    _cli(tally, where, "check", path)
    _cli(tally, where, "import", path, "-o", work / "imported.rewind")


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    import openai

    os.environ["REWIND_MAX_ARCHIVE_BYTES"] = str(SMALL_LIMIT)
    os.environ["REWIND_MAX_BLOB_BYTES"] = str(SMALL_LIMIT)
    warnings.simplefilter("ignore")
    unpatch = rewind.patch_openai()
    with StubServer() as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-chaos", max_retries=0)
        originals = _originals(work, client)
    # The server is gone: a replay that went live would fail to connect, never be answered.
    tally = Tally()
    slowest = 0.0
    hangs = 0
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    formats = ("v1", "v2", "gzip")
    for case in range(TRACES):
        fmt = formats[case % 3]
        folder = work / f"case{case}"
        folder.mkdir()
        path, original = mutator.write_case(rng, originals, fmt, folder)
        started = time.monotonic()
        # A hang ends the scenario loudly, with every thread's stack, and the runner fails it.
        faulthandler.dump_traceback_later(CASE_SECONDS * 6, exit=True, file=sys.__stderr__)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RewindWarning)
                _exercise(tally, f"case {case} ({fmt})", path, original, folder, client)
        finally:
            faulthandler.cancel_dump_traceback_later()
        took = time.monotonic() - started
        slowest = max(slowest, took)
        hangs += took > CASE_SECONDS
        for item in sorted(folder.rglob("*"), reverse=True):
            item.rmdir() if item.is_dir() else item.unlink()
        folder.rmdir()
    unpatch()
    for example in tally.examples:
        print("   fuzz:", example, file=sys.stderr)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "traces": TRACES,
        "readers_per_trace": 9,
        "tracebacks": tally.tracebacks,
        "hangs": hangs,
        "unsafe_output": tally.unsafe,
        "slowest_trace_s": round(slowest, 2),
        "peak_rss_mib": round(peak_rss / 1024, 1),
        "rss_growth_mib": round((peak_rss - start_rss) / 1024, 1),
    }
