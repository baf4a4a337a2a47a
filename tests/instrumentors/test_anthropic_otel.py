"""Spans of instrumented anthropic calls, and how they meet the SDK's own OpenTelemetry spans.

The programs run in a fresh interpreter: the global tracer provider can be set only once
per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _anthropic_support import (
    MODEL,
    ask,
    events,
    needs_sdk_spans,
)
from rewind.instrumentors.anthropic import SDK_SPANS_ENV, usage_attributes

import rewind
from rewind.stub_server import StubServer

SETUP = r"""
import json, os, sys
import anthropic
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.instrumentors.anthropic import AnthropicInstrumentor
from rewind.stub_server import StubServer

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
directory = os.environ["DIR"]
ASK = [{"role": "user", "content": "hi"}]

def spans():
    out = [{"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes),
            "status": s.status.status_code.name, "trace_id": format(s.context.trace_id, "032x"),
            "span_id": format(s.context.span_id, "016x"),
            "parent": format(s.parent.span_id, "016x") if s.parent else None}
           for s in memory.get_finished_spans()]
    memory.clear()
    return out

def traceparents(server, since):
    return [r.headers.get("traceparent") for r in server.requests[since:]]
"""

DEFAULT = (
    SETUP
    + r"""
def agent(client, before_error=lambda: None):
    client.messages.create(model="claude-stub", max_tokens=50, messages=ASK, stop_sequences=["END"])
    with client.messages.stream(model="claude-stub", max_tokens=50, messages=ASK) as stream:
        stream.get_final_text()
    before_error()
    try:
        client.messages.create(model="claude-stub", max_tokens=50, messages=ASK)
    except anthropic.RateLimitError:
        pass

AnthropicInstrumentor().instrument()
report = {}
with StubServer() as server:
    client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk-ant-x", max_retries=0)
    report["port"] = server.port
    client.messages.create(model="claude-stub", max_tokens=50, messages=ASK)  # no session: untouched
    report["outside"] = spans()
    with rewind.record(os.path.join(directory, "a.rewind")):
        agent(client, before_error=lambda: server.fail_next(429))
    report["recorded"] = spans()
    report["traceparents"] = traceparents(server, 1)
    with rewind.record(os.path.join(directory, "b.rewind")):
        agent(client, before_error=lambda: server.fail_next(429))
    report["traceparents_b"] = traceparents(server, 4)
    spans()
with rewind.replay(os.path.join(directory, "a.rewind")):
    agent(client)
report["replayed"] = spans()
print(json.dumps(report))
"""
)


def _report(program: str, where: Path) -> Any:
    """Run ``program`` in a fresh interpreter (importing anthropic alone takes seconds: once per program)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env["DIR"] = str(where)
    result = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    where = tmp_path_factory.mktemp("anthropic-otel")
    return _report(DEFAULT, where), where


def _ids(traceparent: str | None) -> tuple[str, str]:
    """The (trace id, span id) a W3C ``traceparent`` names (its flags vary by SDK version)."""
    assert traceparent is not None
    _version, trace_id, span_id, _flags = traceparent.split("-")
    return trace_id, span_id


def _llm_spans(spans: list[dict]) -> list[dict]:
    return [s for s in spans if s["attributes"].get("gen_ai.provider.name") == "anthropic"]


def test_spans_follow_genai_conventions_live_and_replayed(default_run: tuple[dict[str, Any], Path]) -> None:
    report, _ = default_run
    live, replayed = _llm_spans(report["recorded"]), _llm_spans(report["replayed"])
    assert [s["name"] for s in live] == ["chat claude-stub"] * 3 == [s["name"] for s in replayed]

    create = live[0]["attributes"]
    assert live[0]["kind"] == "CLIENT"
    assert create["gen_ai.operation.name"] == "chat" and create["gen_ai.provider.name"] == "anthropic"
    assert create["gen_ai.request.model"] == "claude-stub" and create["gen_ai.request.max_tokens"] == 50
    assert list(create["gen_ai.request.stop_sequences"]) == ["END"]
    assert create["server.address"] == "127.0.0.1" and create["server.port"] == report["port"]
    assert create["gen_ai.response.id"].startswith("msg_stub_")
    assert create["gen_ai.response.model"] == "claude-stub"
    assert list(create["gen_ai.response.finish_reasons"]) == ["end_turn"]
    assert create["gen_ai.usage.input_tokens"] > 0 and create["gen_ai.usage.output_tokens"] > 0
    assert create["gen_ai.usage.cache_read.input_tokens"] == 0
    assert create["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert create["rewind.kind"] == "llm" and create["rewind.name"] == "anthropic.messages.create"

    stream = live[1]["attributes"]
    assert stream["gen_ai.request.stream"] is True
    assert stream["gen_ai.usage.output_tokens"] > 0 and list(stream["gen_ai.response.finish_reasons"]) == ["end_turn"]

    assert live[2]["status"] == "ERROR" and live[2]["attributes"]["error.type"] == "RateLimitError"

    for before, after in zip(live, replayed):
        assert after["attributes"]["rewind.replayed"] is True
        for key in ("gen_ai.response.id", "gen_ai.usage.output_tokens", "gen_ai.usage.input_tokens"):
            assert after["attributes"].get(key) == before["attributes"].get(key), key
    assert replayed[2]["status"] == "ERROR"
    assert "sk-ant-x" not in json.dumps(report)


@needs_sdk_spans
def test_rewind_span_stands_in_for_the_sdk_call_span(default_run: tuple[dict[str, Any], Path]) -> None:
    report, tmp_path = default_run
    # Outside a session the SDK's own span is left alone.
    assert [s["name"] for s in report["outside"]] == ["anthropic.messages.create"]
    # Inside one there is exactly one LLM span per step: rewind's, live and replayed.
    assert not [s for s in report["recorded"] + report["replayed"] if s["name"].startswith("anthropic.")]
    # The request carries rewind's span context, as it would have carried the SDK's.
    live = _llm_spans(report["recorded"])
    assert [_ids(tp) for tp in report["traceparents"]] == [(s["trace_id"], s["span_id"]) for s in live]
    # Identity ignores headers: a second recording with other trace ids has the same fingerprints.
    assert report["traceparents_b"] != report["traceparents"]
    first = [e.fingerprint for e in events(tmp_path / "a.rewind")]
    second = [e.fingerprint for e in events(tmp_path / "b.rewind")]
    assert first == second and len(first) == 3


KEPT = (
    SETUP
    + r"""
if os.environ["HOW"] == "environment":
    os.environ["REWIND_ANTHROPIC_SDK_SPANS"] = "1"  # what opentelemetry-instrument users set
    AnthropicInstrumentor().instrument()
else:
    AnthropicInstrumentor().instrument(sdk_spans=True)
with StubServer() as server:
    client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk-ant-x", max_retries=0)
    with rewind.record(os.path.join(directory, "kept.rewind")):
        client.messages.create(model="claude-stub", max_tokens=16, messages=ASK)
    print(json.dumps({"spans": spans(), "traceparents": traceparents(server, 0)}))
"""
)


@needs_sdk_spans
@pytest.mark.parametrize("how", ["keyword", "environment"])
def test_sdk_spans_can_be_kept_as_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    assert SDK_SPANS_ENV == "REWIND_ANTHROPIC_SDK_SPANS"
    monkeypatch.setenv("HOW", how)
    report = _report(KEPT, tmp_path)
    theirs = next(s for s in report["spans"] if s["name"] == "anthropic.messages.create")
    ours = next(s for s in report["spans"] if s["name"] == "chat claude-stub")
    assert theirs["parent"] == ours["span_id"] and theirs["trace_id"] == ours["trace_id"]  # nested in rewind's span
    assert _ids(report["traceparents"][-1]) == (theirs["trace_id"], theirs["span_id"])
    assert [e.name for e in events(tmp_path / "kept.rewind")] == ["anthropic.messages.create"]


@pytest.fixture
def nobody_observing_rewind(monkeypatch: pytest.MonkeyPatch) -> None:
    """rewind's private provider as a fresh process has it: nothing but rewind listening.

    A test earlier in the same process may have added a processor to it (tests/engine/,
    tests/importing/), and the SDK cannot remove one: this test gets a new provider of its own.
    """
    from rewind.engine.telemetry import TRACERS

    if not TRACERS.uses_private_provider():
        pytest.skip("a global SDK tracer provider is configured in this process")
    for cached in ("_private", "_last_provider", "_last_tracer"):
        monkeypatch.setattr(TRACERS, cached, None)


@needs_sdk_spans
def test_nobody_observing_rewind_the_sdk_keeps_its_span_on_a_per_client_provider(
    nobody_observing_rewind: None, patched_anthropic: None, stub: StubServer, trace_path: Path
) -> None:
    """With no application provider, rewind's spans reach no one: the SDK's own span goes
    to the client's provider and names itself in ``traceparent``, as without rewind."""
    memory, client = _client_with_own_provider(stub)
    with client, rewind.record(trace_path):
        client.messages.create(model=MODEL, max_tokens=16, messages=ask("inside"))
    (theirs,) = memory.get_finished_spans()
    assert theirs.name == "anthropic.messages.create" and theirs.parent is None
    traceparent = stub.requests[-1].headers["traceparent"]
    assert _ids(traceparent) == (format(theirs.context.trace_id, "032x"), format(theirs.context.span_id, "016x"))
    assert [e.name for e in events(trace_path)] == ["anthropic.messages.create"]


def _client_with_own_provider(stub: StubServer) -> tuple[Any, Any]:
    """A client whose SDK spans go to its own provider (the SDK's per-client option)."""
    import anthropic
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    client = anthropic.Anthropic(
        base_url=stub.anthropic_base_url, api_key="x", max_retries=0, open_telemetry={"tracer_provider": provider}
    )
    return memory, client


def test_identity_is_stable_across_runs_without_any_otel_setup(claude, stub: StubServer, tmp_path: Path) -> None:
    for name in ("one.rewind", "two.rewind"):
        with rewind.record(tmp_path / name):
            claude.messages.create(model=MODEL, max_tokens=32, messages=ask("same"))
            with claude.messages.stream(model=MODEL, max_tokens=32, messages=ask("same")) as stream:
                stream.get_final_text()
    one, two = events(tmp_path / "one.rewind"), events(tmp_path / "two.rewind")
    assert [e.fingerprint for e in one] == [e.fingerprint for e in two]
    assert all("traceparent" not in json.dumps(e.request) for e in one)


def test_usage_counts_cached_input_tokens_as_the_conventions_ask() -> None:
    usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 50,
        "output_tokens": 7,
        "output_tokens_details": {"thinking_tokens": 3},
    }
    assert usage_attributes(usage) == {
        "gen_ai.usage.input_tokens": 160,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.usage.cache_creation.input_tokens": 50,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.reasoning.output_tokens": 3,
    }
    assert usage_attributes({"input_tokens": 4, "cache_read_input_tokens": None}) == {"gen_ai.usage.input_tokens": 4}
