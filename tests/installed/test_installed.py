"""agent-rewind-otel as `pip install` leaves it: every subpackage, through the ways users reach it.

Each test drives the installed copy in real subprocesses: the `rewind` command (every
subcommand), the start-up hook (`REWIND_RECORD`/`REWIND_REPLAY` under plain `python` and
under `opentelemetry-instrument`), the pytest plugin, the report, `rewind import` of OTLP
files and `rewind mutate`, all against the stub model server on loopback.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BIN, SITE, environment

import rewind
from rewind.stub_server import StubServer

REWIND = BIN / "rewind"
#: every command the CLI lists must answer --help; these are the ones the suite also runs
COMMANDS = (
    "check", "compact", "diff", "export", "fork", "import", "mutate", "proxy", "record", "refresh", "replay",
    "report", "show", "stats",
)  # fmt: skip


def answer(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("ANSWER:")]
    assert lines, result.stdout + result.stderr
    return lines[-1]


def record(run, agent: Path, path: str = "run.rewind", **env: str) -> str:
    return answer(run(REWIND, "record", path, "--", sys.executable, agent, **env))


def test_rewind_is_the_installed_copy() -> None:
    assert Path(rewind.__file__).resolve().is_relative_to(SITE.resolve()), rewind.__file__
    assert (SITE / "zz_agent_rewind_otel.pth").is_file()
    for entry in sys.path:  # no source tree: nothing but site-packages holds a rewind package
        folder = Path(entry or ".").resolve()
        assert folder == SITE.resolve() or not (folder / "rewind" / "__init__.py").exists(), entry


def test_every_module_imports() -> None:
    names = [info.name for info in pkgutil.walk_packages(rewind.__path__, "rewind.")]
    assert {"rewind.what_if.mutate", "rewind.instrumentors.openai", "rewind.exporters.rewind_file"} <= set(names)
    for name in names:
        if not name.endswith(".__main__"):  # a __main__ runs its program
            importlib.import_module(name)
    static = Path(rewind.__file__).parent / "report" / "static"
    assert {"report.html", "report.css", "report.js"} <= {path.name for path in static.iterdir()}


def test_version_and_help(run) -> None:
    version = run(REWIND, "--version")
    assert version.returncode == 0 and f"rewind {rewind.__version__} (agent-rewind-otel" in version.stdout
    assert str(SITE.resolve()) in version.stdout or str(SITE) in version.stdout, version.stdout
    commands = run(REWIND, "--help").stdout
    from rewind.cli import COMMANDS as listed

    assert set(COMMANDS) == set(listed), "a command was added: run it in this suite too"
    for command in COMMANDS:
        assert f"  {command} " in commands
        assert run(REWIND, command, "--help").returncode == 0, command


@pytest.mark.parametrize("tool", ["python", "opentelemetry-instrument"])
def test_the_start_up_hook_records_and_replays(run, agent: Path, stub: StubServer, tmp_path: Path, tool: str) -> None:
    prefix = [BIN / "opentelemetry-instrument"] if tool == "opentelemetry-instrument" else []
    recorded = answer(run(*prefix, sys.executable, agent, REWIND_RECORD="run.rewind"))
    assert stub.request_count == 2
    assert [event.name for event in rewind.Trace.load(tmp_path / "run.rewind").events] == [
        "openai.chat.completions.create"
    ] * 2
    replayed = answer(run(*prefix, sys.executable, agent, REWIND_REPLAY="run.rewind", OPENAI_API_KEY=""))
    assert replayed == recorded
    assert stub.request_count == 2  # the replay asked the server nothing


def test_cli_record_replay_and_the_readers(run, agent: Path, stub: StubServer, tmp_path: Path) -> None:
    recorded = record(run, agent)
    assert stub.request_count == 2
    replay = run(REWIND, "replay", "run.rewind", "--", sys.executable, agent, OPENAI_API_KEY="")
    assert answer(replay) == recorded and stub.request_count == 2

    show = run(REWIND, "show", "run.rewind", "-v", "--no-tui")
    assert show.returncode == 0 and "openai.chat.completions.create" in show.stdout, show.stderr
    stats = run(REWIND, "stats", "run.rewind")
    assert stats.returncode == 0 and "llm" in stats.stdout, stats.stderr
    check = run(REWIND, "check", "run.rewind")
    assert check.returncode == 0, check.stdout + check.stderr

    compact = run(REWIND, "compact", "run.rewind", "-o", "run.rewind.gz")
    assert compact.returncode == 0, compact.stderr
    assert run(REWIND, "show", "run.rewind.gz", "--no-tui").returncode == 0

    record(run, agent, "other.rewind", TASK="find me a train to Porto")
    diff = run(REWIND, "diff", "run.rewind", "other.rewind")
    assert diff.returncode == 1 and "step 0" in diff.stdout, diff.stdout + diff.stderr


def test_report_inlines_the_installed_static_files(run, agent: Path, tmp_path: Path) -> None:
    record(run, agent)
    report = run(REWIND, "report", "run.rewind", "-o", "run.html")
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "run.html").read_text()
    css = (Path(rewind.__file__).parent / "report" / "static" / "report.css").read_text()
    first_rule = next(line for line in css.splitlines() if line.strip() and not line.lstrip().startswith("/*"))
    assert first_rule.strip() in page
    assert "openai.chat.completions.create" in page


def test_fork_serves_the_prefix_then_goes_live(run, agent: Path, stub: StubServer) -> None:
    record(run, agent)
    fork = run(REWIND, "fork", "run.rewind", "--at", "1", "--", sys.executable, agent)
    answer(fork)
    assert stub.request_count == 2 + 1  # step 0 served from the trace, step 1 live


def test_mutate_injects_a_fault_per_run(run, agent: Path, stub: StubServer) -> None:
    record(run, agent)
    mutate = run(REWIND, "mutate", "run.rewind", "-f", "rate_limit", "-s", "0", "--json", "--", sys.executable, agent)
    assert mutate.returncode in (0, 1), mutate.stderr
    runs = json.loads(mutate.stdout)
    text = json.dumps(runs)
    assert "rate_limit" in text and "crashed" in text  # the agent does not catch a RateLimitError
    assert stub.request_count == 2  # every mutated run was a replay


def test_import_rebuilds_a_run_from_otlp_spans(run, agent: Path, stub: StubServer, tmp_path: Path) -> None:
    # rewind's own spans, captured by an exporter the application configured, written as the
    # Collector's file exporter writes them (otlp_files.py, copied beside this suite).
    exporter = f"""
import runpy, sys
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_files import write_json
import rewind
from rewind.telemetry import TRACERS
memory = InMemorySpanExporter()
TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
rewind.patch_openai()
with rewind.record("local.rewind"):
    runpy.run_path({str(agent)!r}, run_name="__main__")
write_json(__import__("pathlib").Path("spans.json"), memory.get_finished_spans())
"""
    suite = str(Path(__file__).parent)
    capture = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    recorded = answer(run(sys.executable, "-c", exporter, PYTHONPATH=suite, **capture))
    imported = run(REWIND, "import", "spans.json", "-o", "imported.rewind")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert run(REWIND, "check", "imported.rewind").returncode == 0
    before = stub.request_count
    replay = run(REWIND, "replay", "imported.rewind", "--", sys.executable, agent, OPENAI_API_KEY="")
    assert answer(replay) == recorded and stub.request_count == before


PLUGIN_TEST = """
import openai
import pytest
import rewind


@pytest.fixture(scope="session", autouse=True)
def hooks():
    unpatch = rewind.patch_openai()
    yield
    unpatch()


@pytest.mark.rewind_trace("traces/golden.rewind")
def test_golden(rewind_session):
    client = openai.OpenAI(max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content
"""


def test_the_pytest_plugin_records_then_replays_a_golden_trace(stub: StubServer, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_golden.py").write_text(PLUGIN_TEST)

    def pytest_run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        return subprocess.run(
            command, cwd=project, env=environment(stub, **env), capture_output=True, text=True, timeout=180
        )

    assert "agent-rewind golden traces" in pytest_run("--help").stdout
    recorded = pytest_run("--rewind-record")
    assert recorded.returncode == 0 and "1 recorded" in recorded.stdout, recorded.stdout + recorded.stderr
    assert stub.request_count == 1
    # docs/testing.md's CI recipe: the wheel installed, no key, `pytest -n auto` (xdist workers).
    replayed = pytest_run("-n", "2", OPENAI_API_KEY="")
    assert replayed.returncode == 0 and "1 passed" in replayed.stdout, replayed.stdout + replayed.stderr
    assert stub.request_count == 1


def test_export_then_import_gives_back_the_same_steps(run, agent: Path, tmp_path: Path) -> None:
    record(run, agent)
    export = run(REWIND, "export", "run.rewind", "-o", "spans.jsonl")
    assert export.returncode == 0, export.stdout + export.stderr
    back = run(REWIND, "import", "spans.jsonl", "-o", "back.rewind")
    assert back.returncode == 0, back.stdout + back.stderr
    before, after = (rewind.Trace.load(tmp_path / name) for name in ("run.rewind", "back.rewind"))
    assert [(e.name, e.response) for e in after.events] == [(e.name, e.response) for e in before.events]


def test_refresh_of_a_run_that_still_replays_keeps_every_step(run, agent: Path, stub: StubServer) -> None:
    record(run, agent)
    refresh = run(REWIND, "refresh", "run.rewind", "--", sys.executable, agent)  # may go live: it keeps the key
    assert refresh.returncode == 0, refresh.stdout + refresh.stderr
    assert stub.request_count == 2  # nothing diverged, so nothing ran live again


def test_proxy_records_and_replays_a_client_that_is_not_the_python_sdk(run, stub: StubServer, tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(
        "import json, os, urllib.request\n"
        "body = json.dumps({'model': 'gpt-4o-mini', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode()\n"
        "request = urllib.request.Request(os.environ['OPENAI_BASE_URL'].rstrip('/') + '/chat/completions', body,\n"
        "    {'content-type': 'application/json', 'authorization': 'Bearer sk-proxy-suite'})\n"
        "reply = json.load(urllib.request.urlopen(request, timeout=30))\n"
        "print('ANSWER:', reply['choices'][0]['message']['content'])\n"
    )
    upstream = f"openai={stub.openai_base_url}"
    recorded = answer(
        run(REWIND, "record", "--proxy", "proxy.rewind", "--upstream", upstream, "--", sys.executable, client)
    )
    assert stub.request_count == 1
    assert "sk-proxy-suite" not in (tmp_path / "proxy.rewind").read_text()
    replayed = answer(run(REWIND, "replay", "--proxy", "proxy.rewind", "--", sys.executable, client))
    assert replayed == recorded and stub.request_count == 1
