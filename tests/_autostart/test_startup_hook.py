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
    tmp_path: Path, server: StubServer, *, otel: bool = False, code: str = AGENT, **env: str
) -> subprocess.CompletedProcess[str]:
    agent = tmp_path / "agent.py"
    agent.write_text(code)
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
    [line] = result.stderr.splitlines()
    assert line.startswith("rewind: cannot start the session: rewind failed to start (ImportError: half-installed); ")
    assert "pip install --force-reinstall agent-rewind-otel" in line


def test_the_shipped_pth_file_is_the_hook_source() -> None:
    from rewind._autostart import pth_hook

    source = Path(rewind.__file__).parent / "_autostart" / PTH
    assert source.read_text() == pth_hook.line(), "regenerate: python -m rewind._autostart.pth_hook > " + str(source)


def test_nothing_happens_without_the_variables(tmp_path: Path, stub: StubServer) -> None:
    result = run(tmp_path, stub)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == "ANSWER: Echo: hello\n"
    assert not list(tmp_path.glob("*.rewind"))


# -- failing closed: whatever breaks, a run that asked for a session never goes live ----------------


@pytest.fixture(scope="module")
def one_call(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """AGENT's run, recorded once by the start-up hook (each test replays a copy)."""
    folder = tmp_path_factory.mktemp("recorded")
    path = folder / "run.rewind"
    with StubServer() as server:
        result = run(folder, server, REWIND_RECORD=str(path))
    assert result.returncode == 0, result.stderr
    return path


def _recorded(tmp_path: Path, one_call: Path) -> Path:
    path = tmp_path / "run.rewind"
    shutil.copyfile(one_call, path)
    return path


def _stopped(result: subprocess.CompletedProcess[str], server: StubServer, before: int) -> str:
    """The run ended before the agent ran, the model saw nothing, and rewind said why in one line."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert server.request_count == before
    [line] = result.stderr.splitlines()
    assert line.startswith("rewind: cannot start the session: ")
    return line


def _shadowing_distribution(folder: Path) -> Path:
    """What `pip install agent-rewind` (another project's `rewind`) leaves in site-packages."""
    (folder / "rewind").mkdir(parents=True)
    (folder / "rewind" / "__init__.py").write_text('"""Another project that is also called rewind."""\n')
    (folder / "rewind" / "errors.py").write_text("class RewindError(Exception):\n    pass\n")
    info = folder / "agent_rewind-0.8.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-rewind\nVersion: 0.8.0\n")
    (info / "RECORD").write_text("rewind/__init__.py,,\nrewind/errors.py,,\nagent_rewind-0.8.0.dist-info/RECORD,,\n")
    return folder


@pytest.mark.parametrize("otel", [False, True], ids=["python", "opentelemetry-instrument"])
def test_a_shadowing_rewind_distribution_stops_the_program(
    tmp_path: Path, stub: StubServer, one_call: Path, otel: bool
) -> None:
    path = _recorded(tmp_path, one_call)
    before = stub.request_count
    shadow = _shadowing_distribution(tmp_path / "site")
    result = run(tmp_path, stub, otel=otel, REWIND_REPLAY=str(path), PYTHONPATH=str(shadow))
    line = _stopped(result, stub, before)
    assert "Another distribution owns the rewind package (agent-rewind 0.8.0): pip uninstall agent-rewind" in line


def test_an_opentelemetry_that_cannot_import_stops_the_program(
    tmp_path: Path, stub: StubServer, one_call: Path
) -> None:
    path = _recorded(tmp_path, one_call)
    before = stub.request_count
    broken = tmp_path / "broken" / "opentelemetry"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('opentelemetry is half-installed')\n")
    result = run(tmp_path, stub, REWIND_REPLAY=str(path), PYTHONPATH=str(broken.parent))
    assert "opentelemetry is half-installed" in _stopped(result, stub, before)


def test_a_replay_instruments_an_sdk_whose_instrumentor_is_disabled(
    tmp_path: Path, stub: StubServer, one_call: Path
) -> None:
    # OTEL_PYTHON_DISABLED_INSTRUMENTATIONS leaves openai unrecorded when recording; a replay
    # that left it alone would send its calls to the service ("replayed 0 of 1").
    path = _recorded(tmp_path, one_call)
    stub.stop()  # the model is gone: a live call would fail, not pass
    disabled = {"OTEL_TRACES_EXPORTER": "none", "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "rewind_openai"}
    result = run(tmp_path, stub, otel=True, REWIND_REPLAY=str(path), **disabled)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ANSWER: Echo: hello\n"
    assert "replayed 1 of 1 recorded step" in result.stderr


def test_a_stale_session_owner_does_not_make_the_replay_go_live(
    tmp_path: Path, stub: StubServer, one_call: Path
) -> None:
    path = _recorded(tmp_path, one_call)
    before = stub.request_count
    for stale in (f"1:{path}", f"1:0:{path}", f"{os.getppid()}:{path}"):
        result = run(tmp_path, stub, REWIND_REPLAY=str(path), REWIND_SESSION_PID=stale)
        line = _stopped(result, stub, before)
        assert f"REWIND_SESSION_PID={stale} claims this session for a process that did not start this one" in line
        assert line.endswith("Unset REWIND_SESSION_PID")
    # A claim on another trace is not this session's business: the replay opens as usual.
    result = run(tmp_path, stub, REWIND_REPLAY=str(path), REWIND_SESSION_PID="1:other.rewind")
    assert result.returncode == 0 and result.stdout == "ANSWER: Echo: hello\n", result.stderr
    assert stub.request_count == before


def _fifo(tmp_path: Path, name: str = "fifo") -> Path:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"REWIND_REPLAY": "unreadable.rewind"}, "unreadable.rewind:1: "),
        ({"REWIND_REPLAY": "folder"}, "folder: is a directory, not a trace file"),
        ({"REWIND_REPLAY": "fifo"}, "trace file is a FIFO (named pipe)"),
        ({"REWIND_RECORD": "fifo"}, "fifo: cannot write the trace file there: it is a FIFO (named pipe)"),
        ({"REWIND_RECORD": "/dev/null"}, "it is a character device; rewind writes only regular files"),
        ({"REWIND_FORK_AT": "0", "REWIND_SAVE_AS": "fifo"}, "cannot write the trace file there: it is a FIFO"),
        ({"REWIND_FORK_AT": "0", "REWIND_EDIT": "fifo"}, "cannot read the edit fifo: edit file is a FIFO"),
        ({"REWIND_STATUS_FILE": "fifo"}, "REWIND_STATUS_FILE=fifo is a FIFO (named pipe); name a file"),
        ({"REWIND_STATUS_FILE": "folder"}, "REWIND_STATUS_FILE=folder is a directory; name a file"),
        ({"REWIND_QUIET": "maybe"}, "REWIND_QUIET must be 1 or 0, not 'maybe'"),
        ({"REWIND_EXIT_ON_DIVERGENCE": "maybe"}, "REWIND_EXIT_ON_DIVERGENCE must be 1 or 0, not 'maybe'"),
        ({"REWIND_FORK_AT": "0", "REWIND_EDIT": "edit.json", "REWIND_THEN": "later"}, "REWIND_THEN: "),
    ],
)
def test_a_bad_value_stops_the_program_at_once(
    tmp_path: Path, stub: StubServer, one_call: Path, variables: dict[str, str], named: str
) -> None:
    path = _recorded(tmp_path, one_call)
    before = stub.request_count
    _fifo(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "unreadable.rewind").write_bytes(b"\x00\xff not a trace\n")
    (tmp_path / "edit.json").write_text('{"choices": []}')
    env = {"REWIND_REPLAY": str(path), **variables}
    if "REWIND_RECORD" in env:
        del env["REWIND_REPLAY"]
    result = run(tmp_path, stub, **env)  # run() bounds it: a FIFO must not block the open
    assert named in _stopped(result, stub, before)
    assert not (tmp_path / "fifo").is_file()


def test_recording_to_a_fifo_from_python_is_refused(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path)
    with pytest.raises(rewind.RewindError, match="it is a FIFO"), rewind.record(fifo):
        pass


# -- the exit status of a replay that diverged ------------------------------------------------------

CATCHING = """
import os
import openai
client = openai.OpenAI(max_retries=0)
try:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": os.environ.get("ASK", "hello")}]
    )
    print("ANSWER:", reply.choices[0].message.content)
except Exception as exc:  # an agent that never lets an error out
    print("FALLBACK:", type(exc).__name__)
"""


@pytest.mark.parametrize("otel", [False, True], ids=["python", "opentelemetry-instrument"])
def test_a_swallowed_divergence_fails_the_run(tmp_path: Path, stub: StubServer, one_call: Path, otel: bool) -> None:
    path = _recorded(tmp_path, one_call)
    before = stub.request_count
    quiet = {"OTEL_TRACES_EXPORTER": "none"} if otel else {}
    result = run(tmp_path, stub, otel=otel, code=CATCHING, REWIND_REPLAY=str(path), ASK="changed", **quiet)
    assert result.stdout == "FALLBACK: DivergenceError\n"
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("rewind: replay diverged at step 0")
    assert stub.request_count == before
    # The same program under `rewind replay` fails the same way.
    cli = Path(sys.executable).with_name("rewind")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(OPENAI_BASE_URL=stub.openai_base_url, OPENAI_API_KEY="sk-test", ASK="changed")
    command = [str(cli), "replay", str(path), "--", sys.executable, str(tmp_path / "agent.py")]
    replayed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 1, replayed.stderr


def test_the_divergence_exit_status_can_be_turned_off(tmp_path: Path, stub: StubServer, one_call: Path) -> None:
    path = _recorded(tmp_path, one_call)
    env = {"REWIND_REPLAY": str(path), "ASK": "changed", "REWIND_EXIT_ON_DIVERGENCE": "0"}
    result = run(tmp_path, stub, code=CATCHING, **env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("rewind: replay diverged at step 0")  # still said


def test_unserved_steps_fail_the_run_when_full_consumption_is_required(
    tmp_path: Path, stub: StubServer, one_call: Path
) -> None:
    path = _recorded(tmp_path, one_call)
    code = "print('did nothing')\n"
    relaxed = run(tmp_path, stub, code=code, REWIND_REPLAY=str(path))
    assert relaxed.returncode == 0, relaxed.stderr  # leftovers are a warning ...
    assert "1 recorded step never served" in relaxed.stderr
    strict = run(tmp_path, stub, code=code, REWIND_REPLAY=str(path), REWIND_REQUIRE_FULL_CONSUMPTION="1")
    assert strict.returncode == 1, strict.stderr  # ... unless the run asked for every step
    assert strict.stdout == "did nothing\n"


def test_a_program_that_failed_keeps_its_own_status(tmp_path: Path, stub: StubServer, one_call: Path) -> None:
    path = _recorded(tmp_path, one_call)
    code = CATCHING + "if os.environ.get('OK'):\n    raise SystemExit(0)\nraise RuntimeError('agent failed')\n"
    result = run(tmp_path, stub, code=code, REWIND_REPLAY=str(path), ASK="changed")
    assert result.returncode == 1
    assert "RuntimeError: agent failed" in result.stderr
    assert result.stderr.count("rewind: replay diverged at step 0") == 1
    ok = run(tmp_path, stub, code=code, REWIND_REPLAY=str(path), ASK="changed", OK="1")
    assert ok.returncode == 1  # sys.exit(0) after a swallowed divergence still fails
