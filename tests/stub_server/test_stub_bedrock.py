"""The Bedrock runtime wire format, checked by real boto3 clients (JSON, AWS event streams, errors)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from rewind.stub_server import StubServer

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
SPEC = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS: Any = {"tools": [{"toolSpec": {"name": "search", "inputSchema": {"json": SPEC}}}]}


@pytest.fixture
def bedrock(server: StubServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.bedrock_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="stub",
        aws_secret_access_key="stub",
        # botocore retries throttling on its own; a test wants to see the first failure.
        config=Config(retries={"total_max_attempts": 1}),
    )


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def test_converse_json_and_usage(server: StubServer, bedrock: Any) -> None:
    reply = bedrock.converse(modelId=MODEL, messages=[_user("hello there")])
    assert reply["output"]["message"] == {"role": "assistant", "content": [{"text": "Echo: hello there"}]}
    assert reply["stopReason"] == "end_turn"
    assert reply["usage"] == {"inputTokens": 2, "outputTokens": 3, "totalTokens": 5}
    (request,) = server.requests
    assert request.route == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"  # botocore quotes the colon
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256")


def test_converse_tool_round_trip(bedrock: Any) -> None:
    messages: list[Any] = [_user('search for "otel replay"')]
    first = bedrock.converse(modelId=MODEL, messages=messages, toolConfig=TOOLS)
    assert first["stopReason"] == "tool_use"
    (block,) = first["output"]["message"]["content"]
    use = block["toolUse"]
    assert (use["name"], use["input"]) == ("search", {"query": "otel replay"})
    messages.append(first["output"]["message"])
    result = {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "2 hits"}]}}
    messages.append({"role": "user", "content": [result]})
    final = bedrock.converse(modelId=MODEL, messages=messages, toolConfig=TOOLS)
    assert final["output"]["message"]["content"] == [{"text": "Based on the tool result: 2 hits"}]


def test_converse_stream_text_and_tool_use(bedrock: Any) -> None:
    events = list(bedrock.converse_stream(modelId=MODEL, messages=[_user("one two")])["stream"])
    assert next(iter(events[0])) == "messageStart"
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == "Echo: one two"
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    assert events[-1]["metadata"]["usage"]["outputTokens"] == 3

    events = list(bedrock.converse_stream(modelId=MODEL, messages=[_user("search x")], toolConfig=TOOLS)["stream"])
    starts = [e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e]
    assert [s["name"] for s in starts] == ["search"]
    arguments = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events if "contentBlockDelta" in e)
    assert json.loads(arguments) == {"query": "search x"}
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}


def test_invoke_model_native_bodies(bedrock: Any) -> None:
    anthropic_body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [_user("hi")]}
    reply = json.loads(bedrock.invoke_model(modelId=MODEL, body=json.dumps(anthropic_body))["body"].read())
    assert reply["type"] == "message" and reply["content"] == [{"type": "text", "text": "Echo: hi"}]

    titan = json.loads(
        bedrock.invoke_model(modelId="amazon.titan-text-express-v1", body=json.dumps({"inputText": "hi"}))[
            "body"
        ].read()
    )
    assert titan["results"][0]["outputText"] == "Echo: hi"


def test_invoke_with_response_stream_chunks(bedrock: Any) -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [_user("one two")]}
    stream = bedrock.invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(body))["body"]
    events = [json.loads(e["chunk"]["bytes"]) for e in stream]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "Echo: one two"


def test_errors_are_modeled_exceptions(server: StubServer, bedrock: Any) -> None:
    server.fail_next(429)
    with pytest.raises(ClientError) as throttled:
        bedrock.converse(modelId=MODEL, messages=[_user("hi")])
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
    assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert isinstance(throttled.value, bedrock.exceptions.ThrottlingException)

    server.add_script({"error": {"status": 400, "message": "bad input"}})
    with pytest.raises(bedrock.exceptions.ValidationException) as invalid:
        bedrock.converse(modelId=MODEL, messages=[_user("hi")])
    assert invalid.value.response["Error"]["Message"] == "bad input"


def test_stream_error_midway_is_an_exception_event(server: StubServer, bedrock: Any) -> None:
    server.add_script({"text": "one two three four", "stream_error_after": 2})
    received: list[str] = []
    with pytest.raises(EventStreamError):
        for event in bedrock.converse_stream(modelId=MODEL, messages=[_user("go")])["stream"]:
            if "contentBlockDelta" in event:
                received.append(event["contentBlockDelta"]["delta"]["text"])
    assert "".join(received) == "one two"
