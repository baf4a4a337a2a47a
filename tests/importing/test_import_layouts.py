"""`rewind import` on hand-made OTLP JSON: the span shapes no instrumentation in the main
venv produces (OpenInference tool/retriever spans under a chain, GenAI retrieval and tool
spans, nested duplicate spans, causal order), and hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rewind
from rewind.cli import cli

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}


def span(
    span_id: str, name: str, start: int, attributes: dict[str, Any], parent: str | None = None, **more: Any
) -> Any:
    out: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + start + 1000),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
        **more,
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def write(path: Path, spans: list[dict[str, Any]]) -> Path:
    request = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(request) + "\n")
    return path


def test_openinference_chain_with_llm_tool_and_retriever(tmp_path: Path) -> None:
    chain = span("00000000000000a1", "agent", 0, {"openinference.span.kind": "CHAIN", "input.value": "hi"})
    llm = span(
        "00000000000000a2",
        "ChatCompletion",
        10,
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.system": "openai",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "weather?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Sunny.",
        },
        parent="00000000000000a1",
    )
    # The same call seen by a second instrumentation, inside the first: not a second step.
    inner = span(
        "00000000000000a5",
        "chat gpt-4o-mini",
        10,
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"},
        parent="00000000000000a2",
    )
    tool = span(
        "00000000000000a3",
        "get_weather",
        20,
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": {"city": "Oslo"},
            "output.value": "sunny",
        },
        parent="00000000000000a1",
    )
    retriever = span(
        "00000000000000a4",
        "retrieve",
        20,  # same start as the tool: order falls back to depth, then end time and id
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "oslo weather",
            "retrieval.documents.0.document.content": "Oslo is cold",
            "retrieval.documents.0.document.id": "d1",
        },
        parent="00000000000000a1",
    )
    source = write(tmp_path / "oi.json", [retriever, tool, inner, llm, chain])
    report = rewind.import_telemetry(source, tmp_path / "run.rewind")
    assert [(s.seq, s.kind, s.name) for s in report.steps] == [
        (0, "llm", "openai.chat.completions.create"),
        (1, "tool", "get_weather"),
        (2, "memory", "retrieve"),
    ]
    assert report.replayable and report.unknown == []
    events = rewind.Trace.load(tmp_path / "run.rewind").events
    assert events[0].response["choices"][0]["message"]["content"] == "Sunny."
    assert events[1].request == {"city": "Oslo"} and events[1].response == "sunny"
    assert events[2].response == [{"content": "Oslo is cold", "id": "d1"}]

    @rewind.tool(name="get_weather")
    def weather(city: str) -> str:
        raise AssertionError("served from the import, never run")

    import openai  # the imported model call is served to the real SDK

    unpatch = rewind.patch_openai()
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused", max_retries=0)
        left = pytest.warns(rewind.UnconsumedEventsWarning, match="step 2")
        with left, rewind.replay(tmp_path / "run.rewind") as session:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "weather?"}]
            )
            assert reply.choices[0].message.content == "Sunny."
            assert weather(city="Oslo") == "sunny"
    finally:
        unpatch()
    assert session.cursor == 2  # the retrieval step was left unserved


def test_genai_tool_error_and_anthropic_shape(tmp_path: Path) -> None:
    model = span(
        "00000000000000b1",
        "chat claude-3-5-haiku",
        0,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": "claude-3-5-haiku",
            "gen_ai.request.max_tokens": 100,
            "gen_ai.system_instructions": [{"type": "text", "content": "be brief"}],
            "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "book it"}]}],
            "gen_ai.output.messages": [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": "toolu_1", "name": "book", "arguments": {"id": 7}}],
                    "finish_reason": "tool_call",
                }
            ],
        },
    )
    failed = span(
        "00000000000000b2",
        "execute_tool book",
        10,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book", "gen_ai.tool.call.arguments": {"id": 7}},
        status={"code": 2, "message": "sold out"},
        events=[
            {
                "name": "exception",
                "timeUnixNano": "1",
                "attributes": [
                    {"key": "exception.type", "value": {"stringValue": "travel.errors.SoldOut"}},
                    {"key": "exception.message", "value": {"stringValue": "sold out"}},
                ],
            }
        ],
    )
    source = write(tmp_path / "g.json", [model, failed])
    rewind.import_telemetry(source, tmp_path / "run.rewind")
    first, second = rewind.Trace.load(tmp_path / "run.rewind").events
    assert first.name == "anthropic.messages.create"
    assert first.request == {
        "model": "claude-3-5-haiku",
        "messages": [{"role": "user", "content": "book it"}],
        "system": "be brief",
        "max_tokens": 100,
    }
    assert first.response["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "book", "input": {"id": 7}}]
    assert first.response["stop_reason"] == "tool_use"
    assert not second.ok and second.error["message"] == "sold out"
    check = rewind.check_trace(str(tmp_path / "run.rewind"))
    # Step 0 called a tool the telemetry has no definition of; step 1's error class cannot be
    # imported here (served as a plain ReplayedError): both served, both "degraded".
    assert [s.status for s in check.steps] == ["degraded", "degraded"]
    assert [[p.code for p in s.problems] for s in check.steps] == [["tools_missing"], ["unrevivable"]]
    assert CliRunner().invoke(cli, ["check", str(tmp_path / "run.rewind")]).exit_code == 0
    assert CliRunner().invoke(cli, ["check", "--strict", str(tmp_path / "run.rewind")]).exit_code == 1


@pytest.mark.parametrize(
    "attributes",
    [
        {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[" * 5000},
        {"gen_ai.operation.name": "chat", "gen_ai.input.messages": 12, "gen_ai.output.messages": {"no": "list"}},
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.x.message.role": "user",
            "llm.tools.0.tool.json_schema": "{",
        },
        {"rewind.kind": "llm", "rewind.name": "x", "rewind.event": '{"seq": 0', "rewind.event.sha256": "00"},
    ],
)
def test_odd_attributes_are_reported_never_a_crash(tmp_path: Path, attributes: dict[str, Any]) -> None:
    source = write(tmp_path / "odd.json", [span("00000000000000c1", "odd", 0, attributes)])
    out = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "odd.rewind"), "--json"])
    assert out.exit_code in (0, 1), out.output
    report = json.loads(out.output)
    assert report["replayable"] is False or report["steps"] == []
    rewind.Trace.load(tmp_path / "odd.rewind")  # whatever was written reads back


def test_a_deeply_nested_file_is_a_one_line_error(tmp_path: Path) -> None:
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000)
    out = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "x.rewind")])
    assert out.exit_code == 2 and "Traceback" not in out.output


def test_openinference_embeddings_replay_as_the_sdk_type(tmp_path: Path) -> None:
    embedding = span(
        "00000000000000d1",
        "CreateEmbeddingResponse",
        0,
        {
            "openinference.span.kind": "EMBEDDING",
            "embedding.model_name": "text-embedding-3-small",
            "llm.system": "openai",
            "embedding.embeddings.0.embedding.text": "hello",
            "embedding.embeddings.0.embedding.vector": [0.25, -0.5],
        },
    )
    report = rewind.import_telemetry(write(tmp_path / "e.json", [embedding]), tmp_path / "run.rewind")
    assert [(s.name, s.replayable) for s in report.steps] == [("openai.embeddings.create", True)]

    import openai

    unpatch = rewind.patch_openai()
    try:
        client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused", max_retries=0)
        with rewind.replay(tmp_path / "run.rewind", require_full_consumption=True):
            result = client.embeddings.create(model="text-embedding-3-small", input=["hello"])
    finally:
        unpatch()
    assert type(result).__name__ == "CreateEmbeddingResponse" and result.data[0].embedding == [0.25, -0.5]
