"""``REWIND_RECORD``/``REWIND_REPLAY`` at interpreter start-up: plain ``python`` and failing OpenTelemetry.

The installed ``zz_agent_rewind_otel.pth`` opens the session in any Python of this
environment. Whatever goes wrong on the way, a run that asked for a session never runs
live: every failure below ends with exit status 2 before the agent runs, and the stub
model server sees no request at all.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

import rewind
from rewind.stub_server import StubServer

AGENT = """
import openai
client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
print("ANSWER:", reply.choices[0].message.content)
"""

PTH = "zz_agent_rewind_otel.pth"


def _installed_pth() -> Path | None:
    for folder in [*site.getsitepackages(), site.getusersitepackages()]:
        if (Path(folder) / PTH).exists():
            return Path(folder) / PTH
    return None


@pytest.fixture(scope="module", autouse=True)
def _hook_installed() -> None:
    if _installed_pth() is None:
        pytest.fail(f"{PTH} is not installed in {sys.prefix}; reinstall: pip install -e .")


def _otel_instrument() -> str:
    tool = Path(sys.executable).with_name("opentelemetry-instrument")
    found = str(tool) if tool.exists() else shutil.which("opentelemetry-instrument")
    if found is None:
        pytest.skip("opentelemetry-instrument is not installed")
    return found


def run(
    tmp_path: Path, server: StubServer, *, otel: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    full.update(
        OPENAI_BASE_URL=server.openai_base_url,
        OPENAI_API_KEY="sk-test",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="rewind_anthropic",
    )
    full.update(env)
    command = [sys.executable, str(agent)]
    if otel:
        command.insert(0, _otel_instrument())
    return subprocess.run(command, env=full, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_the_pth_file_is_the_one_in_the_source_tree() -> None:
    installed = _installed_pth()
    assert installed is not None
    source = Path(rewind.__file__).parent / "_autostart" / PTH
    assert installed.read_text() == source.read_text(), "reinstall (pip install -e .) to update the start-up hook"


def test_plain_python_records_and_replays(tmp_path: Path, stub: StubServer) -> None:
    path = tmp_path / "run.rewind"
    live = run(tmp_path, stub, REWIND_RECORD=str(path))
    assert live.returncode == 0, live.stderr
    assert live.stdout == "ANSWER: Echo: hello\n"
    assert [e.name for e in rewind.Trace.load(path).events] == ["openai.chat.completions.create"]
    before = stub.request_count
    replayed = run(tmp_path, stub, REWIND_REPLAY=str(path))
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "ANSWER: Echo: hello\n"
    assert stub.request_count == before  # served from the trace


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "consol"}, "Requested component 'consol' not found"),  # a typo
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "prometheus"}, "'prometheus' not found"),
    ],
)
def test_a_replay_never_goes_live_when_opentelemetry_fails_to_start(
    tmp_path: Path, stub: StubServer, setting: dict[str, str], named: str
) -> None:
    path = tmp_path / "run.rewind"
    assert run(tmp_path, stub, REWIND_RECORD=str(path)).returncode == 0
    before = stub.request_count
    result = run(tmp_path, stub, otel=True, REWIND_REPLAY=str(path), **setting)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""  # the agent never ran ...
    assert stub.request_count == before  # ... and the model saw nothing
    [line] = result.stderr.splitlines()  # one line, not OpenTelemetry's tracebacks
    assert line.startswith("rewind: cannot start the session: OpenTelemetry's start-up failed (RuntimeError: ")
    assert named in line
    assert "would have called the real services" in line
    assert "OTEL_TRACES_EXPORTER=console or none" in line


def test_a_recording_is_not_silently_skipped_when_opentelemetry_fails(tmp_path: Path, stub: StubServer) -> None:
    path = tmp_path / "run.rewind"
    result = run(tmp_path, stub, otel=True, REWIND_RECORD=str(path), OTEL_TRACES_EXPORTER="otlpx")
    assert result.returncode == 2
    assert "would have gone unrecorded" in result.stderr
    assert stub.request_count == 0
    assert not path.exists()


def test_a_working_opentelemetry_start_still_records(tmp_path: Path, stub: StubServer) -> None:
    path = tmp_path / "run.rewind"
    result = run(tmp_path, stub, otel=True, REWIND_RECORD=str(path), OTEL_TRACES_EXPORTER="none")
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"rewind: recorded 1 step to {path}\n"  # what `rewind record` says
    assert len(rewind.Trace.load(path).events) == 1


def test_a_missing_trace_stops_plain_python(tmp_path: Path, stub: StubServer) -> None:
    result = run(tmp_path, stub, REWIND_REPLAY=str(tmp_path / "missing.rewind"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert stub.request_count == 0
    assert result.stderr.strip().endswith("no such trace file; record one with rewind.record(path)")


def test_rewind_that_cannot_be_imported_stops_the_program(tmp_path: Path, stub: StubServer) -> None:
    # A broken install: the `rewind` the hook imports raises.
    shadow = tmp_path / "shadow" / "rewind"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('half-installed')\n")
    path = tmp_path / "run.rewind"
    path.write_text("")
    result = run(tmp_path, stub, REWIND_REPLAY=str(path), PYTHONPATH=str(shadow.parent))
    assert result.returncode == 2
    assert result.stdout == ""
    assert stub.request_count == 0
    assert "rewind: cannot start the session: importing rewind failed (ImportError: half-installed)" in result.stderr


def test_nothing_happens_without_the_variables(tmp_path: Path, stub: StubServer) -> None:
    result = run(tmp_path, stub)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == "ANSWER: Echo: hello\n"
    assert not list(tmp_path.glob("*.rewind"))
