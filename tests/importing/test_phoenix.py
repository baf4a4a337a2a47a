"""Dual export to a real backend: Arize Phoenix receives the spans while rewind writes its file.

An unmodified openai agent runs under ``opentelemetry-instrument`` exporting OTLP/HTTP to a
Phoenix server started here on loopback; the same run is recorded, then replayed offline
(the model server stopped) into the same Phoenix project. We read the spans back through
Phoenix's REST API.

Phoenix is heavy, so it lives in its own virtualenv (``make test-phoenix`` creates
``.venv-phoenix``) and these tests are marked ``phoenix``: they run only when selected with
``-m phoenix``. Point ``REWIND_PHOENIX_PYTHON`` at another interpreter that has
``arize-phoenix``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.stub_server import StubServer

REPO = Path(__file__).resolve().parents[2]


def _phoenix_python() -> str | None:
    configured = os.environ.get("REWIND_PHOENIX_PYTHON")
    if configured:
        return os.path.abspath(configured)  # the server runs in its own folder
    default = REPO / ".venv-phoenix" / "bin" / "python"
    return str(default) if default.exists() else None


def _instrument_tool() -> str | None:
    beside = Path(sys.executable).parent / "opentelemetry-instrument"
    return str(beside) if beside.exists() else shutil.which("opentelemetry-instrument")


PHOENIX_PYTHON = _phoenix_python()
pytestmark = [
    pytest.mark.phoenix,
    pytest.mark.skipif(PHOENIX_PYTHON is None, reason="no Phoenix install (make test-phoenix creates one)"),
    pytest.mark.skipif(_instrument_tool() is None, reason="opentelemetry-instrument is not installed"),
]

AGENT = """
import openai
client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "find me a flight"}],
    temperature=0.2,
)
print(reply.choices[0].message.content)
"""

STARTUP_SECONDS = 180  # first start migrates its database and compiles; ~25 s on 2 cores


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Phoenix:
    """A Phoenix server on loopback, its state in a temporary folder."""

    def __init__(self, python: str, workdir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "phoenix.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_", "REWIND_"))}
        env.update(
            PHOENIX_WORKING_DIR=str(workdir),
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(_free_port()),
            PHOENIX_TELEMETRY_ENABLED="false",
        )
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [python, "-m", "phoenix.server.main", "serve"],
                cwd=workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"Phoenix exited with {self.process.returncode}:\n{self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        pytest.fail(f"Phoenix did not answer within {STARTUP_SECONDS} s:\n{self._tail()}")

    def spans(self, project: str) -> list[dict[str, Any]]:
        url = f"{self.url}/v1/projects/{project}/spans?limit=1000"
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return list(json.load(answer)["data"])
        except urllib.error.HTTPError as error:
            if error.code == 404:  # the project appears with its first span
                return []
            raise

    def wait_for_spans(self, project: str, count: int, timeout: float = 30) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        spans = self.spans(project)
        while len(spans) < count and time.monotonic() < deadline:
            time.sleep(0.3)
            spans = self.spans(project)
        return spans

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])


@pytest.fixture(scope="module")
def phoenix(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    # Only when asked for by name: a Phoenix install lying around must not slow the default suite.
    if "phoenix" not in (request.config.getoption("markexpr", "") or ""):
        pytest.skip("starts a Phoenix server: run with -m phoenix (make test-phoenix)")
    assert PHOENIX_PYTHON is not None
    server = Phoenix(PHOENIX_PYTHON, tmp_path_factory.mktemp("phoenix"))
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()


def _run_instrumented(agent: Path, model_server: StubServer, phoenix: Phoenix, project: str, **env: str) -> Any:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    full.update(
        OPENAI_BASE_URL=model_server.openai_base_url,
        OPENAI_API_KEY="sk-test-not-exported",
        # The application's own telemetry setup: OTLP over HTTP to Phoenix.
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{phoenix.url}/v1/traces",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME="flight-agent",
        OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="rewind_anthropic",
    )
    full.update(env)
    tool = _instrument_tool()
    assert tool is not None
    return subprocess.run(
        [tool, sys.executable, str(agent)], env=full, cwd=agent.parent, capture_output=True, text=True, timeout=120
    )


def test_spans_reach_phoenix_and_the_trace_file_replays(phoenix: Phoenix, tmp_path: Path) -> None:
    agent, path, project = tmp_path / "agent.py", tmp_path / "run.rewind", "rewind-dual-export"
    agent.write_text(AGENT)
    model_server = StubServer().start()
    try:
        live = _run_instrumented(agent, model_server, phoenix, project, REWIND_RECORD=str(path))
    finally:
        model_server.stop()
    assert live.returncode == 0, live.stderr
    assert live.stdout == "Echo: find me a flight\n"

    # The file replays offline (the model server is gone), exporting to Phoenix again.
    replay = _run_instrumented(agent, model_server, phoenix, project, REWIND_REPLAY=str(path))
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == live.stdout
    [event] = rewind.Trace.load(path).events
    assert event.request["messages"][1]["content"] == "find me a flight"

    spans = phoenix.wait_for_spans(project, 4)  # each run: its root span (invoke_agent) and the call
    llm = sorted((s for s in spans if s["attributes"].get("rewind.kind") == "llm"), key=lambda s: s["start_time"])
    assert len(llm) == 2, spans
    recorded, replayed = llm
    for span in (recorded, replayed):
        attrs = span["attributes"]
        assert span["name"] == "chat gpt-4o-mini"
        assert span["span_kind"] == "LLM"  # Phoenix reads the GenAI operation
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
        assert attrs["gen_ai.request.temperature"] == 0.2
        assert attrs["gen_ai.response.model"] == "gpt-4o-mini"
        assert attrs["gen_ai.response.finish_reasons"] == ["stop"]
        assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
        assert json.loads(attrs["gen_ai.input.messages"]) == [
            {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
            {"role": "user", "parts": [{"type": "text", "content": "find me a flight"}]},
        ]
        assert json.loads(attrs["gen_ai.output.messages"]) == [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Echo: find me a flight"}],
                "finish_reason": "stop",
            }
        ]
        assert "sk-test-not-exported" not in json.dumps(span)
    assert "rewind.replayed" not in recorded["attributes"]
    assert recorded["attributes"]["rewind.mode"] == "record"
    # The replay sits next to the original run, marked, with the step it replayed.
    assert replayed["attributes"]["rewind.replayed"] is True
    assert replayed["attributes"]["rewind.replayed_step"] == 0
    assert replayed["attributes"]["rewind.mode"] == "replay"
    assert replayed["attributes"]["gen_ai.response.id"] == recorded["attributes"]["gen_ai.response.id"]
    assert replayed["context"]["trace_id"] != recorded["context"]["trace_id"]
    # One run, one trace: each call nests under its run's invoke_agent span.
    roots = {s["context"]["trace_id"]: s for s in spans if s["name"] == "invoke_agent"}
    for span in (recorded, replayed):
        assert span["parent_id"] == roots[span["context"]["trace_id"]]["context"]["span_id"]


def test_rewind_export_reaches_phoenix_and_imports_back_the_same_trace(phoenix: Phoenix, tmp_path: Path) -> None:
    """Runs recorded with no pipeline around them, sent afterwards with `rewind export`, then
    pulled back from Phoenix with `rewind import`: the same steps, proven by their digests."""
    import hashlib

    @rewind.tool
    def lookup(city: str) -> dict[str, Any]:
        if city == "Atlantis":
            raise LookupError(f"no such city: {city}")
        return {"city": city, "flights": [{"to": city, "price_eur": 129.5}]}

    tools = tmp_path / "tools.rewind"
    with rewind.record(tools):
        lookup("Lisbon")
        with pytest.raises(LookupError):
            lookup("Atlantis")
    project = "rewind-export"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env["OTEL_RESOURCE_ATTRIBUTES"] = f"openinference.project.name={project}"
    rewind_cli = str(Path(sys.executable).parent / "rewind")

    def digests(path: Path) -> list[str]:
        return [hashlib.sha256(event.to_line()).hexdigest() for event in rewind.Trace.load(path).events]

    expected = 0
    for source in (REPO / "tests" / "fixtures" / "corpus" / "openai.rewind", tools):
        sent = subprocess.run(
            [rewind_cli, "export", str(source), "--endpoint", phoenix.url + "/v1/traces", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert sent.returncode == 0, sent.stderr
        trace_id = json.loads(sent.stdout)["trace_id"]
        expected += len(rewind.Trace.load(source)) + 1
        spans = phoenix.wait_for_spans(project, expected)
        assert len(spans) == expected, spans
        mine = [s for s in spans if s["context"]["trace_id"] == trace_id]
        [root] = [s for s in mine if s["name"] == "invoke_agent"]
        assert all(s["parent_id"] == root["context"]["span_id"] for s in mine if s is not root)

        back = tmp_path / f"back-{trace_id}.rewind"
        pulled = subprocess.run(
            [rewind_cli, "import", phoenix.url, "--project", project, "--trace-id", trace_id, "-o", str(back)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        assert digests(back) == digests(source)
