"""The Mistral wire format, checked by the real ``mistralai`` SDK parsing every answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mistralai.client import Mistral, errors

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
def client(server: StubServer) -> Mistral:
    return Mistral(api_key="stub", server_url=server.mistral_base_url)


def test_chat_json_echo_usage_and_request_log(server: StubServer, client: Mistral) -> None:
    reply = client.chat.complete(model="mistral-small-latest", messages=[{"role": "user", "content": "hello there"}])
    assert reply.choices[0].message is not None
    assert reply.choices[0].message.content == "Echo: hello there"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "mistral-small-latest"
    assert reply.usage.prompt_tokens == 2 and reply.usage.completion_tokens == 3 and reply.usage.total_tokens == 5
    (request,) = server.requests
    assert (request.method, request.route) == ("POST", "/mistral/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer stub"


def test_tool_round_trip(client: Mistral) -> None:
    messages: list[Any] = [{"role": "user", "content": 'search for "otel replay"'}]
    first = client.chat.complete(model="m", messages=messages, tools=[SEARCH_TOOL])
    message = first.choices[0].message
    assert message is not None and first.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    (call,) = message.tool_calls
    assert call.function.name == "search"
    assert json.loads(str(call.function.arguments)) == {"query": "otel replay"}
    # Mistral's API insists on nine-character alphanumeric call ids.
    assert call.id is not None and len(call.id) == 9 and call.id.isalnum()

    messages.append({"role": "assistant", "content": "", "tool_calls": [call.model_dump()]})
    messages.append({"role": "tool", "name": "search", "tool_call_id": call.id, "content": "2 hits"})
    final = client.chat.complete(model="m", messages=messages, tools=[SEARCH_TOOL])
    assert final.choices[0].message is not None
    assert final.choices[0].message.content == "Based on the tool result: 2 hits"


def test_tool_choice_none_and_any(client: Mistral) -> None:
    plain = client.chat.complete(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=[SEARCH_TOOL], tool_choice="none"
    )
    assert plain.choices[0].message is not None and plain.choices[0].message.content == "Echo: hi"
    forced = client.chat.complete(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=[SEARCH_TOOL], tool_choice="any"
    )
    assert forced.choices[0].message is not None and forced.choices[0].message.tool_calls


def test_stream_text_then_usage_on_the_last_chunk(client: Mistral) -> None:
    events = list(client.chat.stream(model="m", messages=[{"role": "user", "content": "one two three"}]))
    text = "".join(str(e.data.choices[0].delta.content or "") for e in events)
    assert text == "Echo: one two three"
    assert events[0].data.choices[0].delta.role == "assistant"
    assert events[-1].data.choices[0].finish_reason == "stop"
    assert events[-1].data.usage is not None and events[-1].data.usage.completion_tokens == 4
    assert all(e.data.usage is None for e in events[:-1])


def test_stream_tool_call_arrives_whole(client: Mistral) -> None:
    events = list(
        client.chat.stream(model="m", messages=[{"role": "user", "content": "search x"}], tools=[SEARCH_TOOL])
    )
    calls = [c for e in events for c in (e.data.choices[0].delta.tool_calls or [])]
    assert [(c.function.name, json.loads(str(c.function.arguments))) for c in calls] == [
        ("search", {"query": "search x"})
    ]
    assert events[-1].data.choices[0].finish_reason == "tool_calls"


async def test_async_complete_and_stream(server: StubServer) -> None:
    async with Mistral(api_key="stub", server_url=server.mistral_base_url) as client:
        reply = await client.chat.complete_async(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message is not None and reply.choices[0].message.content == "Echo: hi"
        stream = await client.chat.stream_async(model="m", messages=[{"role": "user", "content": "hi"}])
        pieces = [str(e.data.choices[0].delta.content or "") async for e in stream]
        assert "".join(pieces) == "Echo: hi"
        embedded = await client.embeddings.create_async(model="mistral-embed", inputs="hi")
        assert len(embedded.data) == 1


def test_embeddings_deterministic_with_dimension(client: Mistral) -> None:
    first = client.embeddings.create(model="mistral-embed", inputs=["alpha", "beta"])
    again = client.embeddings.create(model="mistral-embed", inputs=["beta"])
    assert first.id.startswith("embd_stub_") and first.model == "mistral-embed"
    assert [d.index for d in first.data] == [0, 1]
    vectors = [d.embedding or [] for d in first.data]
    assert len(vectors[0]) == 8 and abs(sum(v * v for v in vectors[0]) - 1) < 1e-5
    assert again.data[0].embedding == vectors[1] != vectors[0]
    wide = client.embeddings.create(model="mistral-embed", inputs="alpha", output_dimension=32)
    assert len(wide.data[0].embedding or []) == 32


def test_injected_errors_raise_the_sdk_classes(server: StubServer, client: Mistral) -> None:
    server.fail_next(429, headers={"retry-after": "1"})
    with pytest.raises(errors.SDKError) as rate:
        client.chat.complete(model="m", messages=[{"role": "user", "content": "hi"}])
    assert rate.value.status_code == 429
    body = json.loads(rate.value.body)
    assert body["object"] == "error" and body["type"] == "rate_limited"

    server.fail_next(422)
    with pytest.raises(errors.HTTPValidationError) as invalid:
        client.embeddings.create(model="mistral-embed", inputs="x")
    assert invalid.value.data.detail and invalid.value.data.detail[0].loc == ["body"]

    # A scripted error turn is served in the same shape; the script moves on afterwards.
    server.add_script({"error": {"status": 503, "message": "down"}}, "back")
    with pytest.raises(errors.SDKError) as down:
        client.chat.complete(model="m", messages=[{"role": "user", "content": "hi"}])
    assert down.value.status_code == 503 and json.loads(down.value.body)["message"] == "down"
    after = client.chat.complete(model="m", messages=[{"role": "user", "content": "hi"}])
    assert after.choices[0].message is not None and after.choices[0].message.content == "back"


def test_stream_error_midway(server: StubServer, client: Mistral) -> None:
    server.add_script({"text": "one two three four", "stream_error_after": 2})
    received: list[str] = []
    with pytest.raises(errors.ResponseValidationError):
        for event in client.chat.stream(model="m", messages=[{"role": "user", "content": "go"}]):
            received.append(str(event.data.choices[0].delta.content or ""))
    assert "".join(received) == "one two"


def test_recognised_at_the_root_by_user_agent(server: StubServer) -> None:
    client = Mistral(api_key="stub", server_url=server.url)
    embedded = client.embeddings.create(model="mistral-embed", inputs="x")
    assert embedded.id.startswith("embd_stub_")
    assert server.requests[-1].route == "/v1/embeddings"
