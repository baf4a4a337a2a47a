"""Zero-code sessions that cannot start: every one must stop the program before it runs.

A plain ``python agent.py`` (and ``opentelemetry-instrument python agent.py``) with
``REWIND_REPLAY``/``REWIND_RECORD`` set, broken each way ``tests/_autostart/test_startup_hook.py``
breaks it: another distribution owning ``rewind``, a ``rewind`` or an OpenTelemetry that
cannot be imported, OpenTelemetry's own start-up failing, a missing, unreadable, directory
or FIFO trace, every bad ``REWIND_*`` value, a stale ``REWIND_SESSION_PID``. Each case runs
against a stub model server of its own on loopback and must end with exit status 2 and
one line naming the cause, the model having seen no request. One more case is the
opposite: an instrumentor disabled by ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` must still
replay (exit 0, "replayed 1 of 1"), not go live.

The agent, the runner and the bad values are the normal suite's own (imported, not copied).
"""

from __future__ import annotations

import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "_autostart"))
import test_startup_hook as hook  # tests/_autostart/test_startup_hook.py: the agent, run(), the broken installs

STOPPED = "rewind: cannot start the session: "


@dataclass
class Case:
    """One broken start: ``env`` for the agent, ``prepare(folder)`` for the files it names."""

    env: dict[str, str]
    named: str
    otel: bool = False
    prepare: Callable[[Path], dict[str, str]] = field(default=lambda folder: {})
    recording: bool = False  # REWIND_RECORD instead of a replay of the recorded run


def _parametrized(test: Callable[..., None]) -> list[Any]:
    """The argument values of ``test``'s ``@pytest.mark.parametrize`` (the normal suite's cases)."""
    [mark] = [mark for mark in getattr(test, "pytestmark", []) if mark.name == "parametrize"]
    return list(mark.args[1])


def _shadow(folder: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(hook._shadowing_distribution(folder / "site"))}


def _broken(package: str, message: str) -> Callable[[Path], dict[str, str]]:
    def prepare(folder: Path) -> dict[str, str]:
        broken = folder / "broken" / package
        broken.mkdir(parents=True)
        (broken / "__init__.py").write_text(f"raise ImportError({message!r})\n")
        return {"PYTHONPATH": str(broken.parent)}

    return prepare


def _bad_value_files(folder: Path) -> dict[str, str]:
    hook._fifo(folder)
    (folder / "folder").mkdir()
    (folder / "unreadable.rewind").write_bytes(b"\x00\xff not a trace\n")
    (folder / "edit.json").write_text('{"choices": []}')
    return {}


def cases() -> dict[str, Case]:
    found: dict[str, Case] = {
        "shadowing distribution": Case({}, "Another distribution owns the rewind package", prepare=_shadow),
        "shadowing distribution (otel)": Case(
            {}, "Another distribution owns the rewind package", otel=True, prepare=_shadow
        ),
        "rewind import error": Case(
            {}, "rewind failed to start (ImportError: half-installed)", prepare=_broken("rewind", "half-installed")
        ),
        "opentelemetry import error": Case(
            {}, "opentelemetry is half-installed", prepare=_broken("opentelemetry", "opentelemetry is half-installed")
        ),
        "missing trace": Case({"REWIND_REPLAY": "missing.rewind"}, "no such trace file"),
        "recording, opentelemetry fails": Case(
            {"OTEL_TRACES_EXPORTER": "otlpx", "REWIND_RECORD": "{folder}/new.rewind"},
            "would have gone unrecorded",
            otel=True,
            recording=True,
        ),
    }
    for setting, named in _parametrized(hook.test_a_replay_never_goes_live_when_opentelemetry_fails_to_start):
        found[f"opentelemetry start-up: {setting}"] = Case(setting, named, otel=True)
    # A live process that did not start the agent: this one's parent (the agent's grandparent).
    for stale in ("1:{trace}", "1:0:{trace}", f"{os.getppid()}:{{trace}}"):
        found[f"stale REWIND_SESSION_PID={stale}"] = Case({"REWIND_SESSION_PID": stale}, "claims this session")
    for variables, named in _parametrized(hook.test_a_bad_value_stops_the_program_at_once):
        found[f"bad value: {variables}"] = Case(
            dict(variables), named, prepare=_bad_value_files, recording="REWIND_RECORD" in variables
        )
    return found


def _one(number: int, name: str, case: Case, recorded: Path, work: Path) -> dict[str, Any]:
    folder = work / f"case-{number}"
    folder.mkdir()
    trace = folder / "run.rewind"
    shutil.copyfile(recorded, trace)
    env = {k: v.format(trace=trace, folder=folder) for k, v in case.env.items()}
    env.update(case.prepare(folder))
    if not case.recording:
        env.setdefault("REWIND_REPLAY", str(trace))
    started = time.monotonic()
    with StubServer() as server:
        try:
            done = hook.run(folder, server, otel=case.otel, **env)
            status: int | str = done.returncode
            stdout, stderr = done.stdout, done.stderr
        except subprocess.TimeoutExpired:
            status, stdout, stderr = "hung", "", ""
        requests = server.request_count
    lines = stderr.splitlines()
    clear = len(lines) == 1 and lines[0].startswith(STOPPED) and case.named in lines[0]
    if status != 2 or requests or stdout or not clear:
        print(f"   startup: {name}: exit {status}, {requests} request(s), stderr {stderr[-400:]!r}", file=sys.stderr)
    return {
        "status": status,
        "requests": requests,
        "ran": bool(stdout),
        "clear": clear,
        "seconds": time.monotonic() - started,
    }


def _disabled_instrumentor(recorded: Path, work: Path) -> tuple[int, int]:
    """(replayed, requests) of a replay whose instrumentor OpenTelemetry was told to skip."""
    folder = work / "disabled-instrumentor"
    folder.mkdir()
    trace = folder / "run.rewind"
    shutil.copyfile(recorded, trace)
    disabled = {"OTEL_TRACES_EXPORTER": "none", "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "rewind_openai"}
    with StubServer() as server:
        done = hook.run(folder, server, otel=True, REWIND_REPLAY=str(trace), **disabled)
        requests = server.request_count
    replayed = done.returncode == 0 and "replayed 1 of 1 recorded step" in done.stderr
    return int(replayed and done.stdout == "ANSWER: Echo: hello\n"), requests


def run(rng: random.Random, work: Path) -> dict[str, Any]:
    if hook._installed_pth() is None:
        raise RuntimeError(f"{hook.PTH} is not installed in {sys.prefix}; reinstall: pip install -e .")
    recorded = work / "recorded.rewind"
    with StubServer() as server:
        made = hook.run(work, server, REWIND_RECORD=str(recorded))
    if made.returncode != 0:
        raise RuntimeError(f"recording the agent failed: {made.stderr}")
    chosen = cases()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # each case has its own stub server
        jobs = [(number, name, case) for number, (name, case) in enumerate(chosen.items())]
        results = list(pool.map(lambda job: _one(job[0], job[1], job[2], recorded, work), jobs))
    replayed, requests = _disabled_instrumentor(recorded, work)
    return {
        "cases": len(results),
        "stopped_with_status_2": sum(r["status"] == 2 for r in results),
        "not_stopped": sum(r["status"] != 2 for r in results),
        "requests_to_the_model": sum(r["requests"] for r in results) + requests,
        "agent_ran": sum(r["ran"] for r in results),
        "unclear_messages": sum(not r["clear"] for r in results),
        "slowest_case_s": max(r["seconds"] for r in results),
        "disabled_instrumentor_replayed": replayed,
    }
