"""Zero-code record and replay under ``opentelemetry-instrument``, in real processes.

The agent below is plain openai code: nothing imports rewind. ``opentelemetry-instrument``
finds rewind's instrumentors through the ``opentelemetry_instrumentor`` entry points and
opens the session through the ``opentelemetry_post_instrument`` hook.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.stub_server import StubServer

AGENT = """
import asyncio, os
import openai

question = os.environ.get("QUESTION", "hello")
client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": question}])
print("ANSWER:", reply.choices[0].message.content)

if os.environ.get("PARALLEL"):
    async def main():
        aclient = openai.AsyncOpenAI(max_retries=0)
        async def ask(word):
            r = await aclient.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": word}])
            return r.choices[0].message.content
        return await asyncio.gather(*(ask(w) for w in os.environ["PARALLEL"].split(",")))
    print("PARALLEL:", sorted(asyncio.run(main())))
"""


def _tool() -> str | None:
    beside = Path(sys.executable).parent / "opentelemetry-instrument"
    return str(beside) if beside.exists() else shutil.which("opentelemetry-instrument")


pytestmark = pytest.mark.skipif(_tool() is None, reason="opentelemetry-instrument is not installed")


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


@pytest.fixture
def server() -> Any:
    stub = StubServer().start()
    yield stub
    stub.stop()


def instrument(agent: Path, server: StubServer, *, spans: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """``opentelemetry-instrument python agent.py`` with ``env``; spans print to stdout when asked."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    full.update(
        OPENAI_BASE_URL=server.openai_base_url,
        OPENAI_API_KEY="sk-test",
        OTEL_TRACES_EXPORTER="console" if spans else "none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME="agent",
        # Only what a test looks at: importing the anthropic SDK costs seconds.
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="rewind_anthropic",
    )
    full.update(env)
    tool = _tool()
    assert tool is not None
    return subprocess.run(
        [tool, sys.executable, str(agent)], env=full, cwd=agent.parent, capture_output=True, text=True, timeout=120
    )


def console_spans(stdout: str) -> list[dict[str, Any]]:
    """The spans the console exporter printed (indented JSON blocks) between the program's lines."""
    spans: list[dict[str, Any]] = []
    block: list[str] | None = None
    for line in stdout.splitlines():
        if line == "{":
            block = [line]
        elif block is not None:
            block.append(line)
            if line == "}":
                spans.append(json.loads("\n".join(block)))
                block = None
    return spans


def llm_spans(stdout: str) -> list[dict[str, Any]]:
    return [s for s in console_spans(stdout) if s["attributes"].get("rewind.kind") == "llm"]


def test_records_an_unmodified_agent_and_replays_it_offline(agent: Path, server: StubServer, tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    live = instrument(agent, server, spans=True, REWIND_RECORD=str(path))
    assert live.returncode == 0, live.stderr
    assert "ANSWER: Echo: hello" in live.stdout
    assert [e.name for e in rewind.Trace.load(path).events] == ["openai.chat.completions.create"]
    [recorded] = llm_spans(live.stdout)
    assert recorded["name"] == "chat gpt-4o-mini"
    assert recorded["kind"] == "SpanKind.CLIENT"
    assert recorded["attributes"]["gen_ai.provider.name"] == "openai"
    assert recorded["attributes"]["gen_ai.usage.input_tokens"] > 0
    assert "rewind.replayed" not in recorded["attributes"]
    assert recorded["resource"]["attributes"]["service.name"] == "agent"

    server.stop()  # from here on, a live call could not connect
    replayed = instrument(agent, server, spans=True, REWIND_REPLAY=str(path))
    assert replayed.returncode == 0, replayed.stderr
    assert "ANSWER: Echo: hello" in replayed.stdout
    [span] = llm_spans(replayed.stdout)
    # Same span, same attributes, marked as a replay of step 0: comparable side by side in a backend.
    assert span["attributes"]["rewind.replayed"] is True
    assert span["attributes"]["rewind.replayed_step"] == 0
    assert span["attributes"]["gen_ai.response.id"] == recorded["attributes"]["gen_ai.response.id"]
    assert span["attributes"]["rewind.mode"] == "replay"


def test_content_reaches_other_backends_only_when_asked(agent: Path, server: StubServer, tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    quiet = instrument(agent, server, spans=True, REWIND_RECORD=str(path), QUESTION="the secret plan")
    [span] = llm_spans(quiet.stdout)
    assert not [k for k in span["attributes"] if k.startswith("gen_ai.input") or k.startswith("gen_ai.output")]
    assert "the secret plan" not in json.dumps(span)
    assert "the secret plan" in path.read_text()  # the rewind file always holds the payloads

    loud = instrument(
        agent,
        server,
        spans=True,
        REWIND_REPLAY=str(path),
        QUESTION="the secret plan",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
    )
    assert loud.returncode == 0, loud.stderr
    [span] = llm_spans(loud.stdout)
    assert json.loads(span["attributes"]["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "the secret plan"}]}
    ]
    assert json.loads(span["attributes"]["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Echo: the secret plan"}], "finish_reason": "stop"}
    ]


def test_match_parallel_from_the_environment(agent: Path, server: StubServer, tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    assert instrument(agent, server, REWIND_RECORD=str(path), PARALLEL="a,b,c").returncode == 0
    server.stop()
    env = {"REWIND_REPLAY": str(path), "PARALLEL": "c,a,b"}  # the concurrent calls start in another order
    strict = instrument(agent, server, **env)
    assert strict.returncode != 0 and "DivergenceError" in strict.stderr
    parallel = instrument(agent, server, REWIND_MATCH="parallel", **env)
    assert parallel.returncode == 0, parallel.stderr
    assert "PARALLEL: ['Echo: a', 'Echo: b', 'Echo: c']" in parallel.stdout


def test_fork_from_the_environment(agent: Path, server: StubServer, tmp_path: Path) -> None:
    path, forked = tmp_path / "run.rewind", tmp_path / "forked.rewind"
    assert instrument(agent, server, REWIND_RECORD=str(path), PARALLEL="a").returncode == 0
    result = instrument(
        agent, server, REWIND_REPLAY=str(path), REWIND_FORK_AT="1", REWIND_SAVE_AS=str(forked), PARALLEL="z"
    )
    assert result.returncode == 0, result.stderr
    assert "PARALLEL: ['Echo: z']" in result.stdout
    events = rewind.Trace.load(forked).events
    assert [e.live for e in events] == [False, True]
    assert events[1].request["messages"][0]["content"] == "z"


def test_disabling_one_provider_leaves_its_calls_alone(agent: Path, server: StubServer, tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    result = instrument(
        agent, server, REWIND_RECORD=str(path), OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="rewind_openai,rewind_anthropic"
    )
    assert result.returncode == 0, result.stderr
    assert "ANSWER: Echo: hello" in result.stdout  # ran live, unrecorded
    assert rewind.Trace.load(path).events == []


def test_a_missing_sdk_is_skipped_quietly(agent: Path, server: StubServer, tmp_path: Path) -> None:
    # An environment without the anthropic SDK: importing it fails the way a missing package does.
    shadow = tmp_path / "shadow" / "anthropic"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'anthropic'\", name='anthropic')\n"
    )
    path = tmp_path / "run.rewind"
    result = instrument(
        agent,
        server,
        REWIND_RECORD=str(path),
        PYTHONPATH=str(shadow.parent),
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="",  # both rewind instrumentors load
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"rewind: recorded 1 step to {path}\n"  # nothing about anthropic
    assert [e.name for e in rewind.Trace.load(path).events] == ["openai.chat.completions.create"]


def test_a_session_that_cannot_start_stops_the_program(agent: Path, server: StubServer, tmp_path: Path) -> None:
    # opentelemetry-instrument swallows failing hooks; a replay must not quietly go live instead.
    result = instrument(agent, server, REWIND_REPLAY=str(tmp_path / "missing.rewind"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().endswith("no such trace file; record one with rewind.record(path)")
    assert server.request_count == 0


def test_the_cli_wraps_an_instrumented_command(agent: Path, server: StubServer, tmp_path: Path) -> None:
    # opentelemetry-instrument execs the program: the session it opened moves with the process id.
    rewind_script = Path(sys.executable).with_name("rewind")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(
        OPENAI_BASE_URL=server.openai_base_url,
        OPENAI_API_KEY="sk-test",
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="rewind_anthropic",
    )
    tool = _tool()
    assert tool is not None
    command = [str(rewind_script), "record", "run.rewind", "--", tool, sys.executable, str(agent)]
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "rewind: recorded 1 step to run.rewind\n"
    assert len(rewind.Trace.load(tmp_path / "run.rewind").events) == 1


BOTH = """
import os
import anthropic, openai

if "openai" in os.environ["CALLS"]:
    chat = openai.OpenAI(max_retries=0).chat.completions
    r = chat.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "o"}])
    print("openai:", r.choices[0].message.content)
if "anthropic" in os.environ["CALLS"]:
    m = anthropic.Anthropic(max_retries=0).messages.create(
        model="claude-stub", max_tokens=64, messages=[{"role": "user", "content": "a"}]
    )
    print("anthropic:", m.content[0].text)
"""


def test_each_provider_is_its_own_instrumentation(server: StubServer, tmp_path: Path) -> None:
    agent, path = tmp_path / "both.py", tmp_path / "run.rewind"
    agent.write_text(BOTH)
    keys = {"ANTHROPIC_BASE_URL": server.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    disabled = {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "rewind_openai"}
    live = instrument(agent, server, REWIND_RECORD=str(path), CALLS="openai,anthropic", **keys, **disabled)
    assert live.returncode == 0, live.stderr
    assert live.stdout == "openai: Echo: o\nanthropic: Echo: a\n"
    # openai ran live and unrecorded; anthropic, instrumented by rewind_anthropic, was recorded.
    assert [e.name for e in rewind.Trace.load(path).events] == ["anthropic.messages.create"]
    server.stop()
    replayed = instrument(agent, server, REWIND_REPLAY=str(path), CALLS="anthropic", **keys, **disabled)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "anthropic: Echo: a\n"
