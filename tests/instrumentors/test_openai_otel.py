"""Spans of instrumented openai calls on a real user TracerProvider (GenAI semantic conventions).

Runs in a fresh interpreter: the global tracer provider can be set only once per process.
"""

from __future__ import annotations

import json
from pathlib import Path

PROGRAM = r"""
import json, os
import openai
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.integrations import patch_openai
from rewind.stub_server import StubServer

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
patch_openai()
path = os.environ["TRACE"]

def agent(client, before_error=lambda: None):
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                                   temperature=0.3, max_tokens=50, top_p=0.9, seed=7, stop=["END"])
    list(client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "s"}],
                                        stream=True, stream_options={"include_usage": True}))
    client.embeddings.create(model="text-embedding-3-small", input="e")
    before_error()
    try:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "err"}])
    except openai.RateLimitError:
        pass

with StubServer() as server:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-x", max_retries=0)
    port = server.port
    with rewind.record(path):
        agent(client, before_error=lambda: server.fail_next(429))
recorded = len(memory.get_finished_spans())
with rewind.replay(path):
    agent(client)

print(json.dumps({
    "port": port,
    "recorded": recorded,
    "spans": [{"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes),
               "status": s.status.status_code.name} for s in memory.get_finished_spans()],
}))
"""


def test_spans_follow_genai_conventions_live_and_replayed(run_python, tmp_path: Path) -> None:
    result = run_python(PROGRAM, env={"TRACE": str(tmp_path / "run.rewind")})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    spans = [s for s in report["spans"] if "gen_ai.provider.name" in s["attributes"]]
    assert report["recorded"] == 5 and len(spans) == 8  # four calls and their run's root span
    live, replayed = spans[:4], spans[4:]

    chat = live[0]
    assert chat["name"] == "chat gpt-4o-mini" and chat["kind"] == "CLIENT"
    attrs = chat["attributes"]
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
    assert attrs["gen_ai.request.temperature"] == 0.3
    assert attrs["gen_ai.request.max_tokens"] == 50
    assert attrs["gen_ai.request.top_p"] == 0.9
    assert attrs["gen_ai.request.seed"] == 7
    assert list(attrs["gen_ai.request.stop_sequences"]) == ["END"]
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == report["port"]
    assert attrs["gen_ai.response.id"].startswith("chatcmpl-")
    assert attrs["gen_ai.response.model"] == "gpt-4o-mini"
    assert list(attrs["gen_ai.response.finish_reasons"]) == ["stop"]
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 0
    assert attrs["gen_ai.usage.reasoning.output_tokens"] == 0
    assert "sk-x" not in json.dumps(report)

    stream = live[1]["attributes"]
    assert stream["gen_ai.request.stream"] is True
    assert stream["gen_ai.usage.output_tokens"] > 0 and list(stream["gen_ai.response.finish_reasons"]) == ["stop"]

    embeddings = live[2]
    assert embeddings["name"] == "embeddings text-embedding-3-small"
    assert embeddings["attributes"]["gen_ai.operation.name"] == "embeddings"
    assert embeddings["attributes"]["gen_ai.embeddings.dimension.count"] == 8

    error = live[3]
    assert error["status"] == "ERROR" and error["attributes"]["error.type"] == "RateLimitError"

    for before, after in zip(live, replayed):
        assert after["name"] == before["name"]
        assert after["attributes"]["rewind.replayed"] is True
        for key in ("gen_ai.response.id", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons"):
            assert after["attributes"].get(key) == before["attributes"].get(key), key
    assert replayed[3]["status"] == "ERROR"
