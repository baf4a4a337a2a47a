"""GenAI content capture: payload conversions, and what reaches a span (opt-in, redacted)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.engine.content_capture import ENV, capturing, input_attributes, output_attributes
from rewind.engine.telemetry import TRACERS


def _messages(attrs: dict[str, str], key: str) -> Any:
    return json.loads(attrs[key])


@pytest.mark.parametrize(
    ("value", "on"),
    [
        (None, False),
        ("", False),
        ("false", False),
        ("NO_CONTENT", False),
        ("EVENT_ONLY", False),  # rewind emits no events, and spans stay clean
        ("true", True),
        ("True", True),
        ("SPAN_ONLY", True),
        ("span_and_event", True),
    ],
)
def test_the_switch(value: str | None, on: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    assert capturing() is on


def test_openai_chat_with_tool_calls() -> None:
    request = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "developer", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "weather?"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
    }
    attrs = input_attributes("llm", "chat", request)
    assert _messages(attrs, "gen_ai.input.messages") == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "weather?"},
                {"type": "uri", "modality": "image", "uri": "https://x/y.png"},
            ],
        },
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
    ]
    assert "gen_ai.system_instructions" not in attrs
    response = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c2", "function": {"name": "book", "arguments": "{not json"}}],
                },
            }
        ]
    }
    assert _messages(output_attributes("llm", response), "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c2", "name": "book", "arguments": "{not json"}],
            "finish_reason": "tool_calls",
        }
    ]


def test_anthropic_messages() -> None:
    request = {
        "model": "claude",
        "system": [{"type": "text", "text": "you are terse"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "found"}]}
                ],
            },
        ],
    }
    attrs = input_attributes("llm", "chat", request)
    assert _messages(attrs, "gen_ai.system_instructions") == [{"type": "text", "content": "you are terse"}]
    assert _messages(attrs, "gen_ai.input.messages")[2] == {
        "role": "user",
        "parts": [{"type": "tool_call_response", "id": "t1", "response": "found"}],
    }
    response = {
        "type": "message",
        "role": "assistant",
        "stop_reason": "end_turn",
        "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "done"}],
    }
    assert _messages(output_attributes("llm", response), "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "hmm"}, {"type": "text", "content": "done"}],
            "finish_reason": "end_turn",
        }
    ]


def test_openai_responses_api() -> None:
    request = {
        "model": "gpt-4o",
        "instructions": "answer in French",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            {"type": "function_call", "call_id": "f1", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "f1", "output": "42"},
        ],
    }
    attrs = input_attributes("llm", "chat", request)
    assert _messages(attrs, "gen_ai.system_instructions") == [{"type": "text", "content": "answer in French"}]
    assert [m["role"] for m in _messages(attrs, "gen_ai.input.messages")] == ["user", "assistant", "tool"]
    assert _messages(input_attributes("llm", "chat", {"input": "plain"}), "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "plain"}]}
    ]
    response = {
        "object": "response",
        "status": "completed",
        "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thought"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "bonjour"}]},
        ],
    }
    assert _messages(output_attributes("llm", response), "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "thought"}, {"type": "text", "content": "bonjour"}],
            "finish_reason": "stop",
        }
    ]


def test_what_is_not_chat_carries_no_messages() -> None:
    assert input_attributes("llm", "embeddings", {"input": "vector me"}) == {}
    assert output_attributes("llm", {"object": "list", "data": [{"embedding": [0.1]}]}) == {}
    assert input_attributes("memory", "retrieval", {"query": "q"}) == {}
    assert input_attributes("tool", "execute_tool", {"city": "Paris"}) == {
        "gen_ai.tool.call.arguments": '{"city":"Paris"}'
    }
    assert output_attributes("tool", ["ok"]) == {"gen_ai.tool.call.result": '["ok"]'}


# -- on real spans ----------------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not TRACERS.uses_private_provider():
        pytest.skip("a global SDK tracer provider is configured in this process")
    memory = InMemorySpanExporter()
    processor = SimpleSpanProcessor(memory)
    TRACERS.private_provider().add_span_processor(processor)
    try:
        yield memory
    finally:
        memory.clear()
        memory.shutdown()  # the SDK cannot remove a processor; a shut-down exporter drops spans


@rewind.llm
def model(**request: Any) -> dict[str, Any]:
    return {
        "id": "r1",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hi " + request["messages"][0]["content"]},
            }
        ],
    }


@rewind.tool
def search(query: str, api_key: str) -> dict[str, Any]:
    return {"hits": [query]}


def _agent() -> None:
    model(model="m", messages=[{"role": "user", "content": "Ada"}])
    search("flights", api_key="sk-SECRET")


def _scrub(payload: Any) -> Any:
    if isinstance(payload, dict) and "api_key" in payload:
        return {**payload, "api_key": "***"}
    return payload


def test_off_by_default_and_the_file_still_has_everything(
    spans: InMemorySpanExporter, trace_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with rewind.record(trace_path):
        _agent()
    for span in spans.get_finished_spans():
        assert not [
            k for k in span.attributes or {} if k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call"))
        ]
    assert "Ada" in trace_path.read_text()


def test_on_for_live_and_replayed_calls_and_redacted(
    spans: InMemorySpanExporter, trace_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "true")
    with rewind.record(trace_path, redact=_scrub):
        _agent()
    with rewind.replay(trace_path, redact=_scrub):  # the replayed run's requests are its own: scrub them too
        _agent()
    # The calls' spans (each run's invoke_agent root span carries no content).
    finished = [dict(s.attributes or {}) for s in spans.get_finished_spans() if s.name != "invoke_agent"]
    assert len(finished) == 4
    llm_live, tool_live, llm_replayed, tool_replayed = finished
    for llm in (llm_live, llm_replayed):
        assert json.loads(llm["gen_ai.input.messages"]) == [
            {"role": "user", "parts": [{"type": "text", "content": "Ada"}]}
        ]
        assert json.loads(llm["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "hi Ada"}]
    for tool in (tool_live, tool_replayed):
        # What other backends see is the stored payload: the redactor ran on it.
        assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"query": "flights", "api_key": "***"}
        assert json.loads(tool["gen_ai.tool.call.result"]) == {"hits": ["flights"]}
    assert llm_replayed["rewind.replayed"] is True and tool_replayed["rewind.replayed_step"] == 1


def test_real_sdk_streams_carry_the_accumulated_answer(
    spans: InMemorySpanExporter, trace_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic = pytest.importorskip("anthropic")
    openai = pytest.importorskip("openai")
    from rewind.setup.integrations import patched
    from rewind.stub_server import StubServer

    monkeypatch.setenv(ENV, "SPAN_ONLY")
    with StubServer() as server, patched("openai", "anthropic"):
        claude = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk-ant-x", max_retries=0)
        gpt = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-x", max_retries=0)
        with rewind.record(trace_path):
            with claude.messages.stream(
                model="claude-stub", max_tokens=64, system="terse", messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                assert stream.get_final_text() == "Echo: hi"
            gpt.responses.create(model="gpt-4o-mini", instructions="be kind", input="yo")
    claude_span, gpt_span = (dict(s.attributes or {}) for s in spans.get_finished_spans() if s.name != "invoke_agent")
    assert json.loads(claude_span["gen_ai.system_instructions"]) == [{"type": "text", "content": "terse"}]
    assert json.loads(claude_span["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Echo: hi"}], "finish_reason": "end_turn"}
    ]
    assert json.loads(gpt_span["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "yo"}]}
    ]
    assert json.loads(gpt_span["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "Echo: yo"}]
