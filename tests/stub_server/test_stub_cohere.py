"""The Cohere wire format (v2 chat/embed/rerank, v1 embed/rerank), checked by the real ``cohere`` SDK."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from typing import Any

import cohere
import httpx
import pytest
from cohere import v2

from rewind.stub_server import StubServer

SEARCH_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


@pytest.fixture
def co(server: StubServer) -> Iterator[cohere.ClientV2]:
    # The SDK retries 429 and 5xx twice with a backoff of a second or more by default.
    yield cohere.ClientV2(api_key="stub", base_url=server.cohere_base_url, max_retries=0, timeout=10)


def test_chat_json_text_and_usage(server: StubServer, co: cohere.ClientV2) -> None:
    reply = co.chat(model="command-a-03-2025", messages=[{"role": "user", "content": "hello there"}])
    assert isinstance(reply, cohere.V2ChatResponse)
    assert reply.finish_reason == "COMPLETE"
    assert reply.message.content is not None
    (item,) = reply.message.content
    assert isinstance(item, cohere.TextAssistantMessageResponseContentItem) and item.text == "Echo: hello there"
    assert reply.usage is not None and reply.usage.tokens is not None
    assert (reply.usage.tokens.input_tokens, reply.usage.tokens.output_tokens) == (2, 3)
    (request,) = server.requests
    assert (request.route, request.headers["authorization"]) == ("/v2/chat", "Bearer stub")


def test_chat_tool_round_trip(co: cohere.ClientV2) -> None:
    messages: list[Any] = [{"role": "user", "content": 'search for "otel replay"'}]
    first = co.chat(model="command-a", messages=messages, tools=[SEARCH_TOOL])
    assert first.finish_reason == "TOOL_CALL"
    assert first.message.tool_plan and not first.message.content
    assert first.message.tool_calls is not None
    (call,) = first.message.tool_calls
    assert call.function is not None and call.function.name == "search"
    assert json.loads(call.function.arguments or "") == {"query": "otel replay"}

    messages.append({"role": "assistant", "tool_plan": first.message.tool_plan, "tool_calls": [call.dict()]})
    messages.append(
        {"role": "tool", "tool_call_id": call.id, "content": [{"type": "document", "document": {"data": "2 hits"}}]}
    )
    final = co.chat(model="command-a", messages=messages, tools=[SEARCH_TOOL])
    assert final.message.content is not None
    assert [c.text for c in final.message.content if isinstance(c, cohere.TextAssistantMessageResponseContentItem)] == [
        "Based on the tool result: 2 hits"
    ]


def test_chat_json_schema_response_format(co: cohere.ClientV2) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    reply = co.chat(
        model="command-a",
        messages=[{"role": "user", "content": "city=Paris"}],
        response_format={"type": "json_object", "json_schema": schema},
    )
    assert reply.message.content is not None
    item = reply.message.content[0]
    assert isinstance(item, cohere.TextAssistantMessageResponseContentItem)
    assert json.loads(item.text) == {"city": "Paris"}


def test_chat_stream_text_event_sequence(co: cohere.ClientV2) -> None:
    events = list(co.chat_stream(model="command-a", messages=[{"role": "user", "content": "one two"}]))
    kinds = [e.type for e in events]
    assert kinds == ["message-start", "content-start", *["content-delta"] * 3, "content-end", "message-end"]
    deltas = [e for e in events if isinstance(e, v2.ContentDeltaV2ChatStreamResponse)]
    assert (
        "".join(d.delta.message.content.text for d in deltas if d.delta and d.delta.message and d.delta.message.content)
        == "Echo: one two"
    )  # type: ignore[misc]
    end = events[-1]
    assert isinstance(end, v2.MessageEndV2ChatStreamResponse) and end.delta is not None
    assert end.delta.finish_reason == "COMPLETE" and end.delta.usage is not None


def test_chat_stream_tool_call(co: cohere.ClientV2) -> None:
    events = list(
        co.chat_stream(model="command-a", messages=[{"role": "user", "content": "search x"}], tools=[SEARCH_TOOL])
    )
    starts = [e for e in events if isinstance(e, v2.ToolCallStartV2ChatStreamResponse)]
    assert len(starts) == 1 and starts[0].delta is not None and starts[0].delta.message is not None
    head = starts[0].delta.message.tool_calls
    assert head is not None and head.function is not None and head.function.name == "search"
    arguments = "".join(
        e.delta.message.tool_calls.function.arguments or ""  # type: ignore[union-attr]
        for e in events
        if isinstance(e, v2.ToolCallDeltaV2ChatStreamResponse)
    )
    assert json.loads(arguments) == {"query": "search x"}
    assert any(isinstance(e, v2.ToolPlanDeltaV2ChatStreamResponse) for e in events)
    assert isinstance(events[-1], v2.MessageEndV2ChatStreamResponse)
    assert events[-1].delta is not None and events[-1].delta.finish_reason == "TOOL_CALL"


async def test_async_chat_stream_embed_rerank(server: StubServer) -> None:
    co = cohere.AsyncClientV2(api_key="stub", base_url=server.cohere_base_url, max_retries=0, timeout=10)
    reply = await co.chat(model="command-a", messages=[{"role": "user", "content": "hi"}])
    assert reply.finish_reason == "COMPLETE"
    kinds = [e.type async for e in co.chat_stream(model="command-a", messages=[{"role": "user", "content": "hi"}])]
    assert kinds[0] == "message-start" and kinds[-1] == "message-end"
    embedded = await co.embed(model="embed-v4.0", texts=["hi"], input_type="search_query", embedding_types=["float"])
    assert embedded.embeddings.float_ is not None and len(embedded.embeddings.float_) == 1
    ranked = await co.rerank(model="rerank-v3.5", query="fox", documents=["dog", "fox"])
    assert [r.index for r in ranked.results] == [1, 0]


def test_v2_embed_by_type_is_deterministic(co: cohere.ClientV2) -> None:
    kinds: Any = ["float", "int8", "uint8", "binary", "ubinary", "base64"]
    first = co.embed(model="embed-v4.0", texts=["alpha", "beta"], input_type="search_document", embedding_types=kinds)
    again = co.embed(model="embed-v4.0", texts=["beta"], input_type="search_document", embedding_types=["float"])
    assert first.response_type == "embeddings_by_type" and first.texts == ["alpha", "beta"]
    floats = first.embeddings.float_
    assert floats is not None and len(floats) == 2 and len(floats[0]) == 8
    assert again.embeddings.float_ == [floats[1]]
    assert first.embeddings.int8 is not None and all(-128 <= v <= 127 for v in first.embeddings.int8[0])
    assert first.embeddings.ubinary is not None and len(first.embeddings.ubinary[0]) == 1
    assert first.embeddings.base64 is not None
    assert list(struct.unpack("<8f", base64.b64decode(first.embeddings.base64[0]))) == floats[0]
    wide = co.embed(
        model="embed-v4.0", texts=["x"], input_type="classification", embedding_types=["float"], output_dimension=256
    )
    assert wide.embeddings.float_ is not None and len(wide.embeddings.float_[0]) == 256


def test_v2_rerank_orders_by_overlap(co: cohere.ClientV2) -> None:
    ranked = co.rerank(model="rerank-v3.5", query="red fox", documents=["a blue whale", "the red fox", "red"], top_n=2)
    assert [r.index for r in ranked.results] == [1, 2]
    assert ranked.results[0].relevance_score > ranked.results[1].relevance_score
    assert all(0 < r.relevance_score < 1 for r in ranked.results)


def test_v1_embed_and_rerank(server: StubServer) -> None:
    co = cohere.Client(api_key="stub", base_url=server.cohere_base_url, max_retries=0, timeout=10)
    floats = co.embed(model="embed-english-v3.0", texts=["alpha"], input_type="search_document")
    assert isinstance(floats, cohere.EmbeddingsFloatsEmbedResponse) and len(floats.embeddings[0]) == 8
    typed = co.embed(
        model="embed-english-v3.0", texts=["alpha"], input_type="search_document", embedding_types=["float"]
    )
    assert isinstance(typed, cohere.EmbeddingsByTypeEmbedResponse) and typed.embeddings.float_ == floats.embeddings
    ranked = co.rerank(model="rerank-english-v3.0", query="fox", documents=["dog", "fox"], return_documents=True)
    assert [(r.index, r.document.text if r.document else None) for r in ranked.results] == [(1, "fox"), (0, "dog")]
    assert [r.route for r in server.requests] == ["/v1/embed", "/v1/embed", "/v1/rerank"]


def test_errors_raise_the_sdk_classes(server: StubServer, co: cohere.ClientV2) -> None:
    server.fail_next(429)
    with pytest.raises(cohere.TooManyRequestsError) as rate:
        co.chat(model="command-a", messages=[{"role": "user", "content": "hi"}])
    assert rate.value.status_code == 429 and "injected" in rate.value.body["message"]

    server.add_script({"error": {"status": 400, "message": "invalid request: bad model"}})
    with pytest.raises(cohere.BadRequestError) as bad:
        co.chat(model="command-a", messages=[{"role": "user", "content": "hi"}])
    assert bad.value.body == {"id": "req_stub_2", "message": "invalid request: bad model"}

    server.fail_next(503)
    with pytest.raises(cohere.ServiceUnavailableError):
        co.embed(model="embed-v4.0", texts=["x"], input_type="search_query", embedding_types=["float"])


def test_stream_error_midway_drops_the_connection(server: StubServer, co: cohere.ClientV2) -> None:
    server.add_script({"text": "one two three four", "stream_error_after": 2})
    received: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError):
        for event in co.chat_stream(model="command-a", messages=[{"role": "user", "content": "go"}]):
            if isinstance(event, v2.ContentDeltaV2ChatStreamResponse) and event.delta and event.delta.message:
                received.append(event.delta.message.content.text or "")  # type: ignore[union-attr]
    assert "".join(received) == "one two"
    # The server is fine afterwards.
    assert co.chat(model="command-a", messages=[{"role": "user", "content": "hi"}]).finish_reason == "COMPLETE"
