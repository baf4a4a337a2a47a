"""litellm with the openai patch active too, lazy patching, spans, and zero-code instrumentation."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _litellm_support import API_KEY, EMBEDDING_MODEL, MODEL, ask, events, litellm, openai_route, same

import rewind
from rewind.stub_server import StubServer


def _agent(stub: StubServer) -> list:
    """One of each: completion, stream, embedding, and their async twins."""

    async def twins() -> list:
        reply = await litellm.acompletion(model=MODEL, messages=ask("async"), **openai_route(stub))
        stream = await litellm.acompletion(model=MODEL, messages=ask("astream"), stream=True, **openai_route(stub))
        chunks = [c.model_dump() async for c in stream]
        vectors = await litellm.aembedding(model=EMBEDDING_MODEL, input="x", **openai_route(stub))
        return [reply, chunks, vectors]

    return [
        litellm.completion(model=MODEL, messages=ask("sync"), **openai_route(stub)),
        list(litellm.completion(model=MODEL, messages=ask("stream"), stream=True, **openai_route(stub))),
        litellm.embedding(model=EMBEDDING_MODEL, input="y", **openai_route(stub)),
        *asyncio.run(twins()),
    ]


def test_one_agent_call_is_one_step_with_the_openai_patch_active_too(stub: StubServer, trace_path: Path) -> None:
    with rewind.integrations.patched("litellm", "openai"), rewind.record(trace_path):
        live = _agent(stub)
    names = [e.name for e in events(trace_path)]
    assert names == ["litellm.completion", "litellm.completion", "litellm.embedding"] * 2
    assert stub.request_count == 6
    stub.stop()
    for active in (("litellm", "openai"), ("litellm",)):  # either way, the litellm steps answer
        with rewind.integrations.patched(*active), rewind.replay(trace_path):
            assert same(_agent(stub), live)


def test_the_openai_patch_alone_never_records_litellm_calls_twice(stub: StubServer, trace_path: Path) -> None:
    # litellm up to ~1.7x sends OpenAI-compatible models through openai's
    # chat.completions.with_raw_response.create (a recorded openai step); newer releases
    # post with the openai client directly, which no openai hook sees (a live call).
    with rewind.integrations.patched("openai"), rewind.record(trace_path):
        live = litellm.completion(model=MODEL, messages=ask("inner"), **openai_route(stub))
    names = [e.name for e in events(trace_path)]
    assert names in ([], ["openai.chat.completions.create"])
    if not names:
        return
    stub.stop()
    with rewind.integrations.patched("openai"), rewind.replay(trace_path):
        replayed = litellm.completion(model=MODEL, messages=ask("inner"), **openai_route(stub))
    assert replayed.choices[0].message.content == live.choices[0].message.content == "Echo: inner"


LAZY = r"""
import os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import wrapt
import rewind
from rewind.stub_server import StubServer

unpatch = rewind.patch_litellm()
assert "litellm" not in sys.modules, "patching must not import litellm"
from litellm import completion, embedding  # bound after patching: hooked
import litellm

with StubServer() as server:
    route = {"api_base": server.openai_base_url, "api_key": "sk-lazy"}
    with rewind.record(os.environ["TRACE"]):
        completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "lazy"}], **route)
        embedding(model="openai/text-embedding-3-small", input="e", **route)
    unpatch()
    assert not isinstance(litellm.completion, wrapt.FunctionWrapper), "unpatch restores the module function"
    print("steps:", [e.name for e in rewind.Trace.load(os.environ["TRACE"]).events])
"""

NEVER_IMPORTED = r"""
import sys
import wrapt
import rewind
unpatch = rewind.patch_litellm()
unpatch()
import litellm
print("hooked:", isinstance(litellm.completion, wrapt.FunctionWrapper), "litellm" in sys.modules)
"""


def test_patching_before_litellm_is_imported_hooks_it_on_import(run_python, tmp_path: Path) -> None:
    result = run_python(LAZY, env={"TRACE": str(tmp_path / "run.rewind")}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "steps: ['litellm.completion', 'litellm.embedding']" in result.stdout


def test_unpatching_before_the_import_leaves_litellm_alone(run_python) -> None:
    result = run_python(NEVER_IMPORTED, env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "hooked: False True" in result.stdout


SPANS = r"""
import json, os
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.stub_server import StubServer

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
rewind.patch_litellm()
path = os.environ["TRACE"]
KEY = os.environ["KEY"]

def agent(server, fail=False):
    openai_route = {"api_base": server.openai_base_url, "api_key": KEY, "num_retries": 0, "max_retries": 0}
    litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                       temperature=0.3, max_tokens=50, **openai_route)
    list(litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "s"}],
                            stream=True, stream_options={"include_usage": True}, **openai_route))
    litellm.embedding(model="openai/text-embedding-3-small", input="e", **openai_route)
    litellm.completion(model="anthropic/claude-stub", messages=[{"role": "user", "content": "a"}], max_tokens=20,
                       api_base=server.anthropic_base_url, api_key=KEY)
    if fail:
        server.fail_next(429)
    try:
        litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "err"}], **openai_route)
    except litellm.exceptions.RateLimitError:
        pass

with StubServer() as server:
    with rewind.record(path):
        agent(server, fail=True)
recorded = len([s for s in memory.get_finished_spans() if s.attributes.get("rewind.kind") == "llm"])
with rewind.replay(path):
    agent(server)

print(json.dumps({
    "recorded": recorded,
    "spans": [{"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes),
               "status": s.status.status_code.name} for s in memory.get_finished_spans()],
}))
"""


def test_spans_name_the_provider_litellm_routes_to(run_python, tmp_path: Path) -> None:
    result = run_python(SPANS, env={"TRACE": str(tmp_path / "run.rewind"), "KEY": API_KEY}, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    spans = [s for s in report["spans"] if s["attributes"].get("rewind.kind") == "llm"]
    assert report["recorded"] == 5 and len(spans) == 10
    assert API_KEY not in json.dumps(report) and "127.0.0.1" not in json.dumps(report)
    live, replayed = spans[:5], spans[5:]

    chat = live[0]
    assert chat["name"] == "chat gpt-4o-mini" and chat["kind"] == "CLIENT"
    attrs = chat["attributes"]
    assert attrs["gen_ai.provider.name"] == "openai" and attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
    assert attrs["gen_ai.request.temperature"] == 0.3 and attrs["gen_ai.request.max_tokens"] == 50
    assert attrs["gen_ai.response.id"].startswith("chatcmpl-") and attrs["gen_ai.response.model"] == "gpt-4o-mini"
    assert list(attrs["gen_ai.response.finish_reasons"]) == ["stop"]
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0

    assert live[1]["attributes"]["gen_ai.request.stream"] is True
    assert live[1]["attributes"]["gen_ai.usage.output_tokens"] > 0
    assert live[2]["name"] == "embeddings text-embedding-3-small"
    assert live[2]["attributes"]["gen_ai.embeddings.dimension.count"] == 8
    assert live[3]["name"] == "chat claude-stub" and live[3]["attributes"]["gen_ai.provider.name"] == "anthropic"
    assert live[4]["status"] == "ERROR" and live[4]["attributes"]["error.type"] == "RateLimitError"

    for before, after in zip(live, replayed):
        assert after["name"] == before["name"] and after["attributes"]["rewind.replayed"] is True
        for key in ("gen_ai.provider.name", "gen_ai.response.id", "gen_ai.usage.output_tokens"):
            assert after["attributes"].get(key) == before["attributes"].get(key), key
    assert replayed[4]["status"] == "ERROR"


AGENT = """
import litellm
reply = litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "zero code"}])
print("ANSWER:", reply.choices[0].message.content)
"""


def _tool() -> str | None:
    beside = Path(sys.executable).parent / "opentelemetry-instrument"
    return str(beside) if beside.exists() else shutil.which("opentelemetry-instrument")


@pytest.mark.skipif(_tool() is None, reason="opentelemetry-instrument is not installed")
def test_opentelemetry_instrument_records_and_replays_an_unmodified_litellm_agent(tmp_path: Path) -> None:
    agent, path = tmp_path / "agent.py", tmp_path / "run.rewind"
    agent.write_text(AGENT)
    server = StubServer().start()

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
        full.update(
            OPENAI_BASE_URL=server.openai_base_url,  # where litellm sends openai/ models
            OPENAI_API_BASE=server.openai_base_url,  # the name litellm before ~1.7x reads
            OPENAI_API_KEY=API_KEY,
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            OTEL_TRACES_EXPORTER="none",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            **env,
        )
        tool = _tool()
        assert tool is not None
        return subprocess.run(
            [tool, sys.executable, str(agent)], env=full, cwd=tmp_path, capture_output=True, text=True, timeout=180
        )

    try:
        live = run(REWIND_RECORD=str(path))
        assert live.returncode == 0, live.stderr
        assert "ANSWER: Echo: zero code" in live.stdout
        assert [e.name for e in rewind.Trace.load(path).events] == ["litellm.completion"]  # one step, not two
        assert API_KEY not in path.read_text()
    finally:
        server.stop()
    replayed = run(REWIND_REPLAY=str(path))
    assert replayed.returncode == 0, replayed.stderr
    assert "ANSWER: Echo: zero code" in replayed.stdout
