"""``google-genai`` recorded and replayed: the real SDK over loopback HTTP against the stub server.

Every test records against ``StubServer`` (Gemini API wire format), stops the server, and
replays with no network: results must be equal and of the SDK's own types.
"""

from __future__ import annotations

import json
import types as pytypes
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from _native_support import events, patching, spans_fixture  # noqa: F401 - a fixture
from google import genai
from google.genai import errors, types
from pydantic import BaseModel

import rewind
from rewind.errors import DivergenceError, ReplayedError
from rewind.stub_server import StubServer

API_KEY = "AIza-gemini-SECRET-key-never-in-a-trace"
MODEL = "gemini-2.5-flash"
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather for a city.",
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"city": types.Schema(type=types.Type.STRING)},
                required=["city"],
            ),
        )
    ]
)
#: Manual function calling: the SDK must not call anything itself.
MANUAL = types.GenerateContentConfig(
    tools=[WEATHER], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
)


class City(BaseModel):
    name: str
    population: int


def make_client(stub: StubServer) -> Any:
    return genai.Client(api_key=API_KEY, http_options={"base_url": stub.gemini_base_url})


@pytest.fixture
def patched() -> Iterator[None]:
    yield from patching(rewind.patch_gemini)


@pytest.fixture
def client(stub: StubServer, patched: None) -> Iterator[Any]:
    yield make_client(stub)


# --------------------------------------------------------------------------- generate_content


def test_generate_content_replays_offline_as_sdk_types(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.models.generate_content(model=MODEL, contents="hello there", config={"temperature": 0.2})
    (event,) = events(trace_path)
    assert event.name == "gemini.models.generate_content"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.models.generate_content(model=MODEL, contents="hello there", config={"temperature": 0.2})
    assert isinstance(replayed, types.GenerateContentResponse)
    assert replayed == live and replayed.text == live.text == "Echo: hello there"
    assert replayed.usage_metadata == live.usage_metadata


def test_function_calling_round_trip(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        question = types.Content(role="user", parts=[types.Part(text="get_weather city=Paris")])
        first = client.models.generate_content(model=MODEL, contents=[question], config=MANUAL)
        (call,) = first.function_calls
        answer = types.Part.from_function_response(name=call.name, response={"result": "sunny"})
        history = [question, first.candidates[0].content, types.Content(role="user", parts=[answer])]
        second = client.models.generate_content(model=MODEL, contents=history, config=MANUAL)
        return [first, second]

    with rewind.record(trace_path):
        live = agent()
    assert live[0].function_calls[0].name == "get_weather" and live[0].function_calls[0].args == {"city": "Paris"}
    assert [e.name for e in events(trace_path)] == ["gemini.models.generate_content"] * 2
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live
    assert replayed[0].function_calls == live[0].function_calls and replayed[1].text == live[1].text


def test_automatic_function_calling_is_one_step_per_model_turn(
    stub: StubServer, patched: None, trace_path: Path
) -> None:
    ran: list[str] = []

    def weather(city: str) -> str:
        """Weather for a city."""
        ran.append(city)
        return "sunny"

    weather.__annotations__ = {"city": str, "return": str}  # 1.x cannot read string annotations
    weather.__name__ = weather.__qualname__ = "get_weather"
    get_weather = rewind.tool(weather)

    def agent(client: Any) -> Any:
        config = types.GenerateContentConfig(tools=[get_weather])
        return client.models.generate_content(model=MODEL, contents="get_weather city=Paris", config=config)

    with rewind.record(trace_path):
        live = agent(make_client(stub))
    assert live.text == "Based on the tool result: sunny" and ran == ["Paris"]
    kinds = [(e.kind, e.name.rpartition(".")[2] if e.kind == "tool" else e.name) for e in events(trace_path)]
    assert kinds == [
        ("llm", "gemini.models.generate_content"),
        ("tool", "get_weather"),  # between the model turns, as it ran
        ("llm", "gemini.models.generate_content"),
    ]
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent(make_client(stub))
    assert replayed.text == live.text and ran == ["Paris"]  # the recorded tool answered
    assert replayed.automatic_function_calling_history == live.automatic_function_calling_history


def test_response_schema_replays_parsed_models(client: Any, stub: StubServer, trace_path: Path) -> None:
    config = {"response_mime_type": "application/json", "response_schema": City}
    with rewind.record(trace_path):
        live = client.models.generate_content(model=MODEL, contents="a city", config=config)
    assert isinstance(live.parsed, City)
    assert "parsed" not in events(trace_path)[0].response  # derived client-side, recomputed on replay
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.models.generate_content(model=MODEL, contents="a city", config=config)
    assert isinstance(replayed.parsed, City) and replayed.parsed == live.parsed


def test_chat_sessions_replay(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[str]:
        chat = client.chats.create(model=MODEL)
        return [chat.send_message("first").text, chat.send_message("second").text]

    with rewind.record(trace_path):
        live = agent()
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live


def test_changed_request_raises_divergence(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        client.models.generate_content(model=MODEL, contents="hello")
    stub.stop()
    with pytest.raises(DivergenceError) as info, rewind.replay(trace_path):
        client.models.generate_content(model=MODEL, contents="hello, changed")
    assert info.value.step == 0
    assert "gemini.models.generate_content" in str(info.value) and "contents" in str(info.value)


def test_client_built_before_patching_and_transport_options(stub: StubServer, trace_path: Path) -> None:
    early = make_client(stub)
    unpatch = rewind.patch_gemini()
    try:
        with rewind.record(trace_path):
            live = early.models.generate_content(
                model=MODEL, contents="early", config={"http_options": {"headers": {"x-trace": "1"}}}
            )
        stub.stop()
        with rewind.replay(trace_path):  # http_options are transport: not part of the identity
            assert early.models.generate_content(model=MODEL, contents="early") == live
    finally:
        unpatch()


# --------------------------------------------------------------------------- streams


def test_stream_replays_chunks_of_the_sdks_type(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        stream = client.models.generate_content_stream(model=MODEL, contents="stream this please")
        assert isinstance(stream, pytypes.GeneratorType)
        return list(stream)

    with rewind.record(trace_path):
        live = agent()
    (event,) = events(trace_path)
    assert event.name == "gemini.models.generate_content_stream" and not event.get("stream")["truncated"]
    assert event.response["candidates"][0]["content"]["parts"][0]["text"] == "Echo: stream this please"
    assert event.response["candidates"][0]["finishReason"] == "STOP"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live and all(isinstance(c, types.GenerateContentResponse) for c in replayed)
    assert "".join(c.text or "" for c in replayed) == "Echo: stream this please"


def test_stream_with_function_call(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        # Declarations only (no Python callables): nothing for AFC to run. (1.0 streams nothing at all
        # when AFC is disabled outright.)
        config = types.GenerateContentConfig(tools=[WEATHER])
        return list(client.models.generate_content_stream(model=MODEL, contents="get_weather city=Rome", config=config))

    with rewind.record(trace_path):
        live = agent()
    calls = [c for chunk in live for c in chunk.function_calls or []]
    assert calls and calls[0].name == "get_weather"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live
    assert [c for chunk in replayed for c in chunk.function_calls or []] == calls


def test_stream_aborted_early(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        seen = []
        stream = client.models.generate_content_stream(model=MODEL, contents="one two three four five six")
        for chunk in stream:
            seen.append(chunk)
            if len(seen) == 2:
                break
        stream.close()
        return seen

    with rewind.record(trace_path):
        live = agent()
        after = client.models.generate_content(model=MODEL, contents="next")
    first, _ = events(trace_path)
    assert first.get("stream")["truncated"] is True and len(first.get("stream")["chunks"]) == 2
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live
        assert client.models.generate_content(model=MODEL, contents="next") == after


def test_mid_stream_error_replays_after_the_same_chunks(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[Any], BaseException | None]:
        seen: list[Any] = []
        try:
            for chunk in client.models.generate_content_stream(model=MODEL, contents="x"):
                seen.append(chunk)
        except errors.APIError as exc:
            return seen, exc
        return seen, None

    stub.add_script({"text": "one two three four five", "stream_error_after": 2})
    with rewind.record(trace_path):
        live_seen, live_error = agent()
    if live_error is None:  # 1.0 yields the in-band {"error": ...} chunk as a response
        pytest.skip("this google-genai does not raise in-stream errors")
    (event,) = events(trace_path)
    assert not event.ok and len(event.get("stream")["chunks"]) == len(live_seen) > 0
    stub.stop()
    with rewind.replay(trace_path):
        seen, error = agent()
    assert seen == live_seen
    assert isinstance(error, ReplayedError) and isinstance(error, type(live_error))
    assert error.code == live_error.code and error.details == live_error.details


# --------------------------------------------------------------------------- async (client.aio)


async def test_async_generate_stream_and_embed(client: Any, stub: StubServer, trace_path: Path) -> None:
    async def agent() -> list[Any]:
        done = await client.aio.models.generate_content(model=MODEL, contents="async hello")
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents="async stream")
        assert isinstance(stream, AsyncIterator)
        chunks = [chunk async for chunk in stream]
        vectors = await client.aio.models.embed_content(model="text-embedding-004", contents=["a", "b"])
        return [done, chunks, vectors]

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await agent()
    assert replayed == live
    assert isinstance(replayed[0], types.GenerateContentResponse)
    assert isinstance(replayed[1][0], types.GenerateContentResponse)
    assert isinstance(replayed[2], types.EmbedContentResponse) and len(replayed[2].embeddings) == 2


async def test_async_stream_aborted_and_async_error(client: Any, stub: StubServer, trace_path: Path) -> None:
    async def agent(before_error: Any) -> tuple[list[Any], int]:
        seen = []
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents="a b c d e f")
        async for chunk in stream:
            seen.append(chunk)
            if len(seen) == 2:
                break
        await stream.aclose()
        before_error()
        with pytest.raises(errors.ServerError) as info:
            await client.aio.models.generate_content(model=MODEL, contents="busy")
        return seen, info.value.code

    async with rewind.record(trace_path):
        live = await agent(lambda: stub.fail_next(status=503))
    first, second = events(trace_path)
    assert first.get("stream")["truncated"] is True and not second.ok
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent(lambda: None) == live


# --------------------------------------------------------------------------- embeddings and errors


def test_embed_content(client: Any, stub: StubServer, trace_path: Path) -> None:
    config = types.EmbedContentConfig(output_dimensionality=4)
    with rewind.record(trace_path):
        live = client.models.embed_content(model="text-embedding-004", contents=["alpha", "beta"], config=config)
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.models.embed_content(model="text-embedding-004", contents=["alpha", "beta"], config=config)
    assert replayed == live and isinstance(replayed, types.EmbedContentResponse)
    assert len(replayed.embeddings[0].values) == 4


def test_rate_limit_replays_as_client_error(client: Any, stub: StubServer, trace_path: Path) -> None:
    def call() -> Any:
        with pytest.raises(errors.ClientError) as info:
            client.models.generate_content(model=MODEL, contents="limited")
        return info.value

    with rewind.record(trace_path):
        stub.fail_next(status=429, headers={"retry-after": "5"})
        live = call()
    stub.stop()
    with rewind.replay(trace_path):
        replayed = call()
    assert isinstance(replayed, ReplayedError)
    assert (
        (replayed.code, replayed.status, replayed.message)
        == (live.code, live.status, live.message)
        == (
            429,
            "RESOURCE_EXHAUSTED",
            live.message,
        )
    )
    assert replayed.details == live.details and str(replayed) == str(live)
    assert replayed.response.status_code == 429 and replayed.response.headers["Retry-After"] == "5"


# --------------------------------------------------------------------------- secrets and spans


def test_api_key_never_reaches_trace_or_spans(stub: StubServer, patched: None, trace_path: Path, spans: Any) -> None:
    client = genai.Client(
        api_key=API_KEY, http_options={"base_url": stub.gemini_base_url, "headers": {"x-goog-api-key": API_KEY}}
    )
    per_call = {"http_options": {"headers": {"x-goog-api-key": API_KEY}}}
    with rewind.record(trace_path):
        client.models.generate_content(model=MODEL, contents="hi", config=per_call)
        list(client.models.generate_content_stream(model=MODEL, contents="hi"))
        stub.fail_next(status=403)
        with pytest.raises(errors.ClientError):
            client.models.embed_content(model="text-embedding-004", contents="x")
    assert stub.requests[0].headers.get("x-goog-api-key") == API_KEY  # it did go on the wire
    assert API_KEY not in trace_path.read_text()
    # The calls' spans (the session's own invoke_agent span aside).
    finished = [s for s in spans.get_finished_spans() if s.name != "invoke_agent"]
    assert len(finished) == 3
    assert API_KEY not in json.dumps([dict(s.attributes or {}) for s in finished], default=str)
    attrs = dict(finished[0].attributes or {})
    assert finished[0].name == f"generate_content {MODEL}"
    assert attrs["gen_ai.provider.name"] == "gcp.gemini"
    assert attrs["gen_ai.operation.name"] == "generate_content"
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == stub.port
    assert attrs["gen_ai.response.finish_reasons"] == ("STOP",) and attrs["gen_ai.usage.input_tokens"] > 0
    assert attrs["gen_ai.response.model"]
    stream_attrs = dict(finished[1].attributes or {})
    assert stream_attrs["gen_ai.request.stream"] is True and stream_attrs["gen_ai.usage.output_tokens"] > 0
    embed = dict(finished[2].attributes or {})
    assert embed["gen_ai.operation.name"] == "embeddings" and embed["error.type"].endswith("ClientError")
