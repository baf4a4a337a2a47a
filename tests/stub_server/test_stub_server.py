"""The stub server must satisfy the real SDKs, not a hand-written idea of them."""

from __future__ import annotations

import base64
import datetime
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel

REPO_ROOT = Path(__file__).resolve().parents[2]
# The package __init__ is owned elsewhere and may be mid-edit; the stub must import on its own.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from rewind.stub_server import StubServer  # noqa: E402

WEATHER_TOOL_CHAT: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}},
            "required": ["city", "days"],
        },
    },
}
SEARCH_TOOL_CHAT: Any = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
WEATHER_TOOL_ANTHROPIC: Any = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": WEATHER_TOOL_CHAT["function"]["parameters"],
}
SEARCH_TOOL_RESPONSES: Any = {
    "type": "function",
    "name": "search",
    "parameters": SEARCH_TOOL_CHAT["function"]["parameters"],
}


@pytest.fixture(scope="module")
def shared_server() -> Iterator[StubServer]:
    with StubServer() as srv:
        yield srv


@pytest.fixture
def server(shared_server: StubServer) -> StubServer:
    # One listener for the module keeps the suite fast; reset() gives each test fresh ids.
    shared_server.reset()
    return shared_server


@pytest.fixture
def oai(server: StubServer) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="stub", max_retries=0, timeout=10)
    yield client
    client.close()


@pytest.fixture
def ant(server: StubServer) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="stub", max_retries=0, timeout=10)
    yield client
    client.close()


def user(text: str) -> Any:
    return {"role": "user", "content": text}


# --------------------------------------------------------------------------- OpenAI chat completions


def test_chat_json_echo_usage_and_request_record(server: StubServer, oai: openai.OpenAI) -> None:
    result = oai.chat.completions.create(model="gpt-4o-mini", messages=[user("hello  there")])

    assert isinstance(result, openai.types.chat.ChatCompletion)
    assert result.id == "chatcmpl-stub-1"
    assert result.model == "gpt-4o-mini"
    assert result.created == 1_700_000_000
    assert result.choices[0].message.content == "Echo: hello there"
    assert result.choices[0].finish_reason == "stop"
    usage = result.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (2, 3, 5)
    assert usage.prompt_tokens_details is not None and usage.prompt_tokens_details.cached_tokens == 0
    assert usage.completion_tokens_details is not None and usage.completion_tokens_details.reasoning_tokens == 0

    assert server.request_count == 1
    record = server.requests[0]
    assert (record.method, record.path, record.route) == ("POST", "/v1/chat/completions", "/v1/chat/completions")
    assert record.headers["authorization"] == "Bearer stub"
    assert record.body["messages"] == [user("hello  there")]

    # Ids are per-server counters, so a second call is predictable too.
    again = oai.chat.completions.create(model="gpt-4o-mini", messages=[user("hello there")])
    assert again.id == "chatcmpl-stub-2"


def test_chat_stream_with_usage_chunk(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="gpt-4o-mini",
        messages=[user("stream these words please")],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    assert all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Echo: stream these words please"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 2
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ["stop"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    assert all(c.usage is None for c in chunks[:-1])


def test_chat_stream_helper(oai: openai.OpenAI) -> None:
    with oai.chat.completions.stream(model="m", messages=[user("helper")]) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Echo: helper"


async def test_chat_async_json_and_stream(server: StubServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="stub", max_retries=0, timeout=10)
    async with client:
        result = await client.chat.completions.create(model="m", messages=[user("async hi")])
        assert result.choices[0].message.content == "Echo: async hi"
        stream = await client.chat.completions.create(model="m", messages=[user("async stream")], stream=True)
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        assert "".join(pieces) == "Echo: async stream"


def test_chat_tool_round_trip(oai: openai.OpenAI) -> None:
    messages: list[Any] = [user('Use search to find "otel replay" docs')]
    first = oai.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL_CHAT, SEARCH_TOOL_CHAT])

    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "search"  # named in the user text, so it beats the first tool
    assert json.loads(call.function.arguments) == {"query": "otel replay"}

    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "3 results found"})
    second = oai.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL_CHAT, SEARCH_TOOL_CHAT])
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "Based on the tool result: 3 results found"


def test_chat_tool_args_follow_schema_and_stream(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="m", messages=[user("city=Paris forecast")], tools=[WEATHER_TOOL_CHAT], stream=True
    )
    arguments = ""
    name = None
    for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            assert delta_call.function is not None
            name = delta_call.function.name or name
            arguments += delta_call.function.arguments or ""
    assert name == "get_weather"
    # Only required params are filled: strings from the user text, integers 1.
    assert json.loads(arguments) == {"city": "Paris", "days": 1}


class Inner(BaseModel):
    score: int
    tags: list[str]


class Report(BaseModel):
    title: str
    when: datetime.date
    ok: bool
    inner: Inner
    extra: Inner | None


def test_chat_parse_structured_output(oai: openai.OpenAI) -> None:
    result = oai.chat.completions.parse(model="m", messages=[user("quarterly report")], response_format=Report)
    parsed = result.choices[0].message.parsed
    assert isinstance(parsed, Report)
    assert parsed.title == "quarterly report"
    assert parsed.inner.score == 1 and parsed.inner.tags == ["quarterly report"]


# --------------------------------------------------------------------------- OpenAI responses


def test_responses_json(oai: openai.OpenAI) -> None:
    response = oai.responses.create(model="gpt-4.1", input="hi there", instructions="be brief")
    assert response.id == "resp_stub_1"
    assert response.status == "completed"
    assert response.output_text == "Echo: hi there"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (4, 3)
    assert response.usage.total_tokens == 7
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_responses_raw_stream_event_sequence(oai: openai.OpenAI) -> None:
    events = list(oai.responses.create(model="m", input="one two", stream=True))
    types = [e.type for e in events]
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    completed = events[-1]
    assert isinstance(completed, openai.types.responses.ResponseCompletedEvent)
    assert completed.response.output_text == "Echo: one two"


def test_responses_stream_helper_and_tool_round_trip(oai: openai.OpenAI) -> None:
    with oai.responses.stream(model="m", input="please search for 'stub servers'", tools=[SEARCH_TOOL_RESPONSES]) as s:
        seen = {event.type for event in s}
        final = s.get_final_response()
    assert "response.function_call_arguments.delta" in seen
    assert "response.function_call_arguments.done" in seen
    call = final.output[0]
    assert call.type == "function_call"
    assert call.name == "search" and json.loads(call.arguments) == {"query": "stub servers"}

    follow_up: Any = [
        {"role": "user", "content": "please search for 'stub servers'"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "found 2"},
    ]
    answer = oai.responses.create(model="m", input=follow_up, tools=[SEARCH_TOOL_RESPONSES])
    assert answer.output_text == "Based on the tool result: found 2"


def test_responses_parse_structured_output(oai: openai.OpenAI) -> None:
    parsed = oai.responses.parse(model="m", input="weekly", text_format=Inner)
    assert parsed.output_parsed == Inner(score=1, tags=["weekly"])


async def test_responses_async_stream(server: StubServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="stub", max_retries=0, timeout=10)
    async with client, client.responses.stream(model="m", input="async resp") as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_response()
    assert final.output_text == "Echo: async resp"


# --------------------------------------------------------------------------- embeddings and models


def test_embeddings_deterministic_in_every_encoding(server: StubServer, oai: openai.OpenAI) -> None:
    # No encoding_format: the SDK asks for base64 and decodes it itself.
    default = oai.embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"])
    floats = oai.embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"], encoding_format="float")
    assert server.requests[0].body["encoding_format"] == "base64"
    assert [d.embedding for d in default.data] == [d.embedding for d in floats.data]
    first, second = (d.embedding for d in floats.data)
    assert len(first) == 8 and first != second
    assert abs(sum(v * v for v in first) - 1) < 1e-5
    assert floats.usage.prompt_tokens == 2

    single = oai.embeddings.create(model="e", input="alpha", encoding_format="float", dimensions=4)
    assert len(single.data[0].embedding) == 4

    raw = oai.embeddings.create(model="e", input="alpha", encoding_format="base64")
    encoded = raw.data[0].embedding
    assert isinstance(encoded, str)
    assert list(struct.unpack("<8f", base64.b64decode(encoded))) == first


def test_models_for_both_providers(oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    assert "gpt-4o-mini" in [m.id for m in oai.models.list()]
    assert all(m.type == "model" for m in ant.models.list())


# --------------------------------------------------------------------------- Anthropic messages


def test_anthropic_json(ant: anthropic.Anthropic) -> None:
    message = ant.messages.create(model="claude-stub", max_tokens=64, system="sys", messages=[user("hey")])
    assert isinstance(message, anthropic.types.Message)
    assert message.id == "msg_stub_1"
    assert message.model == "claude-stub"
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Echo: hey"  # type: ignore[union-attr]
    assert message.usage.input_tokens == 2 and message.usage.output_tokens == 2
    assert message.usage.cache_read_input_tokens == 0 and message.usage.cache_creation_input_tokens == 0


def test_anthropic_raw_stream_event_sequence(ant: anthropic.Anthropic) -> None:
    stream = ant.messages.create(model="c", max_tokens=64, messages=[user("raw events")], stream=True)
    types = [e.type for e in stream]  # the SDK drops ping events itself
    assert types[0] == "message_start"
    assert types[1] == "content_block_start"
    assert set(types[2:-3]) == {"content_block_delta"}
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_anthropic_stream_helper_with_thinking(ant: anthropic.Anthropic) -> None:
    with ant.messages.stream(
        model="c",
        max_tokens=2048,
        messages=[user("think then answer")],
        thinking={"type": "enabled", "budget_tokens": 1024},
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Echo: think then answer"
    assert [b.type for b in final.content] == ["thinking", "text"]
    thinking = final.content[0]
    assert thinking.type == "thinking" and thinking.signature and "think then answer" in thinking.thinking
    assert final.usage.output_tokens > 4


def test_anthropic_beta_namespace(server: StubServer, ant: anthropic.Anthropic) -> None:
    message = ant.beta.messages.create(model="c", max_tokens=16, messages=[user("beta")])
    assert message.content[0].text == "Echo: beta"  # type: ignore[union-attr]
    # Older SDKs mark the beta namespace with ?beta=true; the route is the same either way.
    tagged = ant.beta.messages.create(model="c", max_tokens=16, messages=[user("beta")], extra_query={"beta": "true"})
    assert tagged.id == "msg_stub_2"
    assert server.requests[-1].path == "/v1/messages?beta=true"
    assert server.requests[-1].route == "/v1/messages"


def test_anthropic_tool_round_trip_streaming(ant: anthropic.Anthropic) -> None:
    messages: list[Any] = [user("what is the weather in Lisbon")]
    with ant.messages.stream(model="c", max_tokens=64, messages=messages, tools=[WEATHER_TOOL_ANTHROPIC]) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    block = first.content[0]
    assert block.type == "tool_use" and block.name == "get_weather"
    assert block.input == {"city": "what is the weather in Lisbon", "days": 1}

    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    messages.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id, "content": "sunny, 21C"}]}
    )
    second = ant.messages.create(model="c", max_tokens=64, messages=messages, tools=[WEATHER_TOOL_ANTHROPIC])
    assert second.stop_reason == "end_turn"
    assert second.content[0].text == "Based on the tool result: sunny, 21C"  # type: ignore[union-attr]


async def test_anthropic_async_stream(server: StubServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=server.anthropic_base_url, api_key="stub", max_retries=0, timeout=10)
    async with client:
        async with client.messages.stream(model="c", max_tokens=64, messages=[user("async claude")]) as stream:
            text = "".join([t async for t in stream.text_stream])
        assert text == "Echo: async claude"
        message = await client.messages.create(model="c", max_tokens=64, messages=[user("x")])
        assert message.content[0].text == "Echo: x"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- scripts


def test_script_turns_then_default_brain(server: StubServer, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    server.add_script(
        "plain string turn",
        {"tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]},
        {"text": "slow", "delay": 0.05},
    )
    assert (
        oai.chat.completions.create(model="m", messages=[user("a")]).choices[0].message.content == "plain string turn"
    )

    tool_turn = ant.messages.create(model="c", max_tokens=8, messages=[user("b")])
    assert tool_turn.stop_reason == "tool_use"
    assert tool_turn.content[0].type == "tool_use" and tool_turn.content[0].input == {"id": 7}

    started = time.monotonic()
    assert oai.responses.create(model="m", input="c").output_text == "slow"
    assert time.monotonic() - started >= 0.05

    assert server.script_remaining == 0
    assert oai.chat.completions.create(model="m", messages=[user("d")]).choices[0].message.content == "Echo: d"


def test_script_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        StubServer(script=[{"txt": "typo"}])


# --------------------------------------------------------------------------- errors


def test_injected_errors_map_to_openai_exceptions(server: StubServer, oai: openai.OpenAI) -> None:
    server.fail_next(status=429, headers={"retry-after": "1"})
    with pytest.raises(openai.RateLimitError) as rate:
        oai.chat.completions.create(model="m", messages=[user("x")])
    assert rate.value.status_code == 429
    assert rate.value.response.headers["retry-after"] == "1"
    assert rate.value.request_id == "req_stub_1"
    assert rate.value.code == "rate_limit_exceeded"

    server.fail_next(status=500, n=2)
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            oai.embeddings.create(model="e", input="x")
    server.fail_next(status=418, body={"error": {"message": "teapot", "type": "odd", "param": None, "code": None}})
    with pytest.raises(openai.APIStatusError) as odd:
        oai.responses.create(model="m", input="x")
    assert odd.value.status_code == 418 and odd.value.message.endswith("teapot")

    assert oai.chat.completions.create(model="m", messages=[user("fine")]).choices[0].message.content == "Echo: fine"


def test_scripted_errors_map_to_anthropic_exceptions(server: StubServer, ant: anthropic.Anthropic) -> None:
    server.add_script(
        {"error": {"status": 429, "type": "rate_limit_error", "message": "slow down", "headers": {"retry-after": "2"}}},
        {"error": {"status": 529}},
        {"error": {"status": 400, "message": "bad"}},
    )
    with pytest.raises(anthropic.RateLimitError) as rate:
        ant.messages.create(model="c", max_tokens=8, messages=[user("x")])
    assert rate.value.status_code == 429
    assert rate.value.response.headers["retry-after"] == "2"
    assert rate.value.request_id == "req_stub_1"
    assert rate.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
        "request_id": "req_stub_1",
    }

    with pytest.raises(anthropic.APIStatusError) as overloaded:
        ant.messages.create(model="c", max_tokens=8, messages=[user("x")])
    assert overloaded.value.status_code == 529

    with pytest.raises(anthropic.BadRequestError):
        ant.messages.create(model="c", max_tokens=8, messages=[user("x")])


def test_stream_error_midway(server: StubServer, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    long_text = "one two three four five six"
    server.add_script(
        {"text": long_text, "stream_error_after": 2},
        {"text": long_text, "stream_error_after": 2},
        {"text": long_text, "stream_error_after": 2},
    )

    received: list[str] = []
    with pytest.raises(openai.APIError) as chat_err:
        for chunk in oai.chat.completions.create(model="m", messages=[user("x")], stream=True):
            received.extend(c.delta.content or "" for c in chunk.choices)
    assert "".join(received) == "one two"
    assert chat_err.value.type == "server_error"

    deltas: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as ant_err,
        ant.messages.stream(model="c", max_tokens=64, messages=[user("x")]) as stream,
    ):
        deltas.extend(stream.text_stream)
    assert "".join(deltas) == "one two"
    assert ant_err.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]

    with pytest.raises(openai.APIError):
        list(oai.responses.create(model="m", input="x", stream=True))


def test_client_abort_midstream_then_server_still_serves(capfd: pytest.CaptureFixture[str]) -> None:
    with StubServer(script=[{"text": " ".join(f"w{i}" for i in range(200))}], stream_delay=0.002) as srv:
        client = openai.OpenAI(base_url=srv.openai_base_url, api_key="stub", max_retries=0, timeout=10)
        stream = client.chat.completions.create(model="m", messages=[user("x")], stream=True)
        for index, _ in enumerate(stream):
            if index == 3:
                break
        stream.close()
        # Give the handler time to hit the closed socket before the next request.
        time.sleep(0.05)
        answer = client.chat.completions.create(model="m", messages=[user("after abort")])
        assert answer.choices[0].message.content == "Echo: after abort"

        sync_ant = anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="stub", max_retries=0, timeout=10)
        srv.add_script({"text": " ".join(f"w{i}" for i in range(200))})
        with sync_ant.messages.stream(model="c", max_tokens=8, messages=[user("x")]) as stream_ant:
            next(iter(stream_ant.text_stream))
        assert sync_ant.messages.create(model="c", max_tokens=8, messages=[user("ok")]).content[0].text == "Echo: ok"  # type: ignore[union-attr]
        client.close()
        sync_ant.close()
    # The hung-up streams must not have produced tracebacks.
    assert capfd.readouterr().err == ""


def test_stopped_server_refuses_connections() -> None:
    srv = StubServer().start()
    port = srv.port
    client = openai.OpenAI(base_url=srv.openai_base_url, api_key="stub", max_retries=0, timeout=5)
    # A pooled keep-alive connection must not outlive stop().
    client.chat.completions.create(model="m", messages=[user("warm the pool")])
    srv.stop()
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=[user("x")])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    client.close()
    srv.stop()  # idempotent


# --------------------------------------------------------------------------- server behaviour


def test_concurrent_requests_with_seeded_latency() -> None:
    with StubServer(latency=0.02, latency_jitter=0.03, seed=7) as srv:
        client = openai.OpenAI(base_url=srv.openai_base_url, api_key="stub", max_retries=0, timeout=10)
        results: list[str] = []
        lock = threading.Lock()

        def call(i: int) -> None:
            out = client.chat.completions.create(model="m", messages=[user(f"n{i}")])
            with lock:
                results.append(out.id)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert time.monotonic() - started < 1.0  # served in parallel, not one after another
        assert sorted(results) == sorted(f"chatcmpl-stub-{i}" for i in range(1, 9))
        assert srv.request_count == 8
        client.close()


def test_unknown_route_and_bad_json(server: StubServer) -> None:
    missing = httpx.post(server.url + "/v1/nope", json={})
    assert missing.status_code == 404
    assert missing.headers["x-request-id"] == "req_stub_1"
    bad = httpx.post(server.openai_base_url + "/chat/completions", content=b"{not json")
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    ant_missing = httpx.post(server.url + "/v1/messages/nope", json={})
    assert ant_missing.json()["type"] == "error" and ant_missing.headers["request-id"] == "req_stub_3"


def test_quiet_by_default(capfd: pytest.CaptureFixture[str], oai: openai.OpenAI) -> None:
    oai.chat.completions.create(model="m", messages=[user("secret prompt")])
    assert capfd.readouterr().err == ""


def test_cli_prints_env_setup() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewind.stub_server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(8)]
        banner = "".join(lines)
        assert "OPENAI_API_KEY=stub" in banner
        base = next(line.split("=", 1)[1].strip() for line in lines if "OPENAI_BASE_URL=" in line)
        assert httpx.get(base + "/models").json()["object"] == "list"
    finally:
        proc.terminate()
        proc.wait(timeout=5)
