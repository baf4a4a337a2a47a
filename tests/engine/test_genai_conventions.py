"""rewind's spans speak today's GenAI conventions: names, the four capture modes, the legacy switch.

A tool-calling turn runs on the real OpenAI SDK over loopback against the stub server,
with a decorated tool, while a real SDK ``TracerProvider`` (rewind's own, with an
in-memory exporter added) collects the spans.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.engine.telemetry import TRACERS
from rewind.stub_server import StubServer

sys.path.insert(0, str(Path(__file__).parent.parent / "importing"))
from otlp_files import write_json

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions")
DETAILS = "gen_ai.client.inference.operation.details"


@rewind.tool
def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": 21}


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    if not TRACERS.uses_private_provider():
        pytest.skip("a global SDK tracer provider is configured in this process")
    for name in ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "REWIND_GENAI_LEGACY_ATTRIBUTES"):
        monkeypatch.delenv(name, raising=False)
    memory = InMemorySpanExporter()
    TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield memory
    finally:
        memory.clear()
        memory.shutdown()


def run_turn(tmp_path: Path, stub: StubServer, spans: InMemorySpanExporter) -> list[ReadableSpan]:
    import openai

    unpatch = rewind.patch_openai()
    try:
        with (
            openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-test", max_retries=0) as client,
            rewind.record(tmp_path / "run.rewind"),
        ):
            messages: list[dict[str, Any]] = [{"role": "user", "content": "weather in Paris?"}]
            first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            call = first.choices[0].message.tool_calls[0]
            get_weather(**json.loads(call.function.arguments))
    finally:
        unpatch()
    return list(spans.get_finished_spans())


def by_operation(finished: list[ReadableSpan], operation: str) -> ReadableSpan:
    [span] = [s for s in finished if (s.attributes or {}).get("gen_ai.operation.name") == operation]
    return span


def test_operation_names_and_provider(tmp_path: Path, stub: StubServer, spans: InMemorySpanExporter) -> None:
    finished = run_turn(tmp_path, stub, spans)
    chat, tool, run = (by_operation(finished, op) for op in ("chat", "execute_tool", "invoke_agent"))
    assert chat.name == "chat gpt-4o-mini" and chat.attributes["gen_ai.provider.name"] == "openai"  # type: ignore[index]
    assert tool.name == "execute_tool get_weather" and tool.attributes["gen_ai.tool.name"] == "get_weather"  # type: ignore[index]
    assert run.name == "invoke_agent"
    for span in (chat, tool, run):
        assert "gen_ai.system" not in (span.attributes or {})  # the replaced name, only behind the switch
        assert not any(k in (span.attributes or {}) for k in CONTENT)  # content is opt-in
        assert not span.events


@pytest.mark.parametrize(
    ("value", "on_span", "on_event"),
    [
        ("SPAN_ONLY", True, False),
        ("span_only", True, False),
        ("EVENT_ONLY", False, True),
        ("SPAN_AND_EVENT", True, True),
        ("NO_CONTENT", False, False),
        ("true", True, False),
        ("false", False, False),
        ("nonsense", False, False),
    ],
)
def test_the_capture_modes(
    value: str,
    on_span: bool,
    on_event: bool,
    tmp_path: Path,
    stub: StubServer,
    spans: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    finished = run_turn(tmp_path, stub, spans)
    chat, tool = by_operation(finished, "chat"), by_operation(finished, "execute_tool")
    attrs = dict(chat.attributes or {})
    assert all((k in attrs) is on_span for k in CONTENT), attrs
    assert ("rewind.event" in attrs) is on_span
    assert ("gen_ai.tool.call.arguments" in (tool.attributes or {})) is on_span
    events = [e for e in chat.events if e.name == DETAILS]
    assert len(events) == (1 if on_event else 0)
    if on_event:
        details = dict(events[0].attributes or {})
        assert json.loads(details["gen_ai.input.messages"]) == [
            {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}
        ]
        assert json.loads(details["gen_ai.tool.definitions"]) == [
            {
                "type": "function",
                "name": "get_weather",
                "description": "The weather in a city",
                "parameters": TOOLS[0]["function"]["parameters"],  # type: ignore[index]
            }
        ]
        assert json.loads(details["gen_ai.output.messages"])[0]["parts"][0]["type"] == "tool_call"
    assert not tool.events  # the details event is the inference's


def test_the_legacy_switch_adds_the_older_names(
    tmp_path: Path, stub: StubServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWIND_GENAI_LEGACY_ATTRIBUTES", "1")
    chat = by_operation(run_turn(tmp_path, stub, spans), "chat")
    attrs = dict(chat.attributes or {})
    assert attrs["gen_ai.system"] == attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.usage.prompt_tokens"] == attrs["gen_ai.usage.input_tokens"] > 0
    assert attrs["gen_ai.usage.completion_tokens"] == attrs["gen_ai.usage.output_tokens"] > 0


def test_event_only_spans_import_from_the_event(
    tmp_path: Path, stub: StubServer, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    finished = run_turn(tmp_path, stub, spans)
    source = write_json(tmp_path / "spans.jsonl", finished)
    report = rewind.import_telemetry(source, tmp_path / "imported.rewind")
    chat = report.steps[0]
    assert (chat.kind, chat.replayable, [p.code for p in chat.problems]) == ("llm", True, [])
    imported = rewind.Trace.load(tmp_path / "imported.rewind").events[0]
    assert imported.request == rewind.Trace.load(tmp_path / "run.rewind").events[0].request


def test_names_agree_with_the_installed_semantic_conventions() -> None:
    """rewind.genai_names takes each name from opentelemetry-semantic-conventions and spells
    it only where an older release lacks it: both spellings must be today's."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    from rewind.data import genai_names

    for name, value in vars(genai_names).items():
        if name.isupper():
            assert getattr(gen_ai_attributes, f"GEN_AI_{name}") == value, name
