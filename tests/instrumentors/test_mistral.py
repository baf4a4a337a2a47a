"""``mistralai`` recorded and replayed: the real SDK over loopback HTTP against the stub server.

Every test records against ``StubServer`` (Mistral wire format), stops the server, and
replays with no network: results must be equal and of the SDK's own types.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from _native_support import TOOLS, ask, events, patching, spans_fixture  # noqa: F401 - a fixture
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.errors import DivergenceError, ReplayedError
from rewind.stub_server import StubServer

try:  # 2.x and later keep the SDK under mistralai.client
    from mistralai.client import (
        Mistral,
        errors,  # type: ignore[attr-defined,unused-ignore]
        models,
    )
    from mistralai.client.utils import eventstreaming
except ImportError:  # 1.x: the flat layout, errors live with the models
    from mistralai import Mistral, models  # type: ignore[attr-defined,no-redef,unused-ignore]
    from mistralai.utils import eventstreaming  # type: ignore[no-redef,unused-ignore]

    errors = models  # type: ignore[assignment,unused-ignore]

API_KEY = "mistral-SECRET-key-never-in-a-trace"
MODEL = "mistral-small-latest"
#: Per-call headers (absent from 1.2.0): a credential passed this way must stay out of the trace too.
HEADERS = (
    {"http_headers": {"Authorization": f"Bearer {API_KEY}"}}
    if "http_headers" in inspect.signature(Mistral().chat.complete).parameters
    else {}
)
#: 1.2.0 returns plain generators from chat.stream; later releases their EventStream classes.
SYNC_STREAM = getattr(eventstreaming, "EventStream", Iterator)
ASYNC_STREAM = getattr(eventstreaming, "EventStreamAsync", AsyncIterator)


@pytest.fixture
def patched() -> Iterator[None]:
    yield from patching(rewind.patch_mistral)


@pytest.fixture
def client(stub: StubServer, patched: None) -> Iterator[Any]:
    c = Mistral(api_key=API_KEY, server_url=stub.mistral_base_url)
    yield c


# --------------------------------------------------------------------------- chat.complete


def test_complete_and_tool_round_trip_replay_offline(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        first = client.chat.complete(model=MODEL, messages=ask("weather in city=Paris"), tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        followup = [
            *ask("weather in city=Paris"),
            {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
            {"role": "tool", "name": call.function.name, "content": "sunny", "tool_call_id": call.id},
        ]
        second = client.chat.complete(model=MODEL, messages=followup, tools=TOOLS, temperature=0.2)
        return [first, second]

    with rewind.record(trace_path):
        live = agent()
    assert live[0].choices[0].finish_reason == "tool_calls"
    assert [e.name for e in events(trace_path)] == ["mistral.chat.complete"] * 2
    stub.stop()

    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live
    assert all(isinstance(r, models.ChatCompletionResponse) for r in replayed)
    assert replayed[0].choices[0].message.tool_calls[0].function.name == "lookup"


def test_changed_request_raises_divergence(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        client.chat.complete(model=MODEL, messages=ask("hello"))
    stub.stop()
    requests = stub.request_count
    with pytest.raises(DivergenceError) as info, rewind.replay(trace_path):
        client.chat.complete(model=MODEL, messages=ask("hello, changed"))
    assert info.value.step == 0 and stub.request_count == requests  # nothing went live
    assert "mistral.chat.complete" in str(info.value) and "messages[0].content" in str(info.value)


def test_transport_options_are_not_identity(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.chat.complete(model=MODEL, messages=ask("hi"), timeout_ms=5000, **HEADERS)
    stub.stop()
    with rewind.replay(trace_path):
        assert client.chat.complete(model=MODEL, messages=ask("hi")) == live


def test_client_built_before_patching_is_recorded(stub: StubServer, trace_path: Path) -> None:
    early = Mistral(api_key=API_KEY, server_url=stub.mistral_base_url)
    unpatch = rewind.patch_mistral()
    try:
        with rewind.record(trace_path):
            live = early.chat.complete(model=MODEL, messages=ask("early"))
        stub.stop()
        with rewind.replay(trace_path):
            assert early.chat.complete(model=MODEL, messages=ask("early")) == live
    finally:
        unpatch()


def test_no_session_is_a_passthrough_and_unpatch_restores(stub: StubServer) -> None:
    original = type(Mistral(api_key=API_KEY).chat).complete
    unpatch = rewind.patch_mistral()
    c = Mistral(api_key=API_KEY, server_url=stub.mistral_base_url)
    assert c.chat.complete(model=MODEL, messages=ask("hi")).choices[0].message.content
    unpatch()
    assert type(c.chat).complete is original


@pytest.mark.skipif(not hasattr(models, "ResponseFormat"), reason="this mistralai has no structured output")
def test_parse_helper_replays_its_parsed_model(client: Any, stub: StubServer, trace_path: Path) -> None:
    if not hasattr(type(client.chat), "parse"):
        pytest.skip("this mistralai has no chat.parse")
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        population: int

    with rewind.record(trace_path):
        live = client.chat.parse(response_format=City, model=MODEL, messages=ask("a city"))
    assert [e.name for e in events(trace_path)] == ["mistral.chat.complete"]  # one step: parse calls complete
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.chat.parse(response_format=City, model=MODEL, messages=ask("a city"))
    assert isinstance(replayed.choices[0].message.parsed, City)
    assert replayed.choices[0].message.parsed == live.choices[0].message.parsed


# --------------------------------------------------------------------------- streams


def test_stream_replays_the_sdks_event_objects(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = list(client.chat.stream(model=MODEL, messages=ask("stream this please")))
    (event,) = events(trace_path)
    assert event.name == "mistral.chat.stream" and event.get("stream")["truncated"] is False
    assert event.response["choices"][0]["message"]["content"] == "Echo: stream this please"
    assert event.response["usage"]["total_tokens"] > 0
    stub.stop()

    with rewind.replay(trace_path):
        stream = client.chat.stream(model=MODEL, messages=ask("stream this please"))
        assert isinstance(stream, SYNC_STREAM)
        replayed = list(stream)
    assert replayed == live
    assert all(isinstance(e, models.CompletionEvent) for e in replayed)
    assert "".join(e.data.choices[0].delta.content or "" for e in replayed) == "Echo: stream this please"


def test_stream_with_tool_call_and_context_manager(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        with client.chat.stream(model=MODEL, messages=ask("look city=Rome up"), tools=TOOLS) as stream:
            return list(stream)

    with rewind.record(trace_path):
        live = agent()
    (event,) = events(trace_path)
    assert event.response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup"
    assert event.response["choices"][0]["finish_reason"] == "tool_calls"
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live


def test_stream_aborted_early_is_truncated_and_replays_the_same_prefix(
    client: Any, stub: StubServer, trace_path: Path
) -> None:
    def agent() -> list[Any]:
        seen = []
        with client.chat.stream(model=MODEL, messages=ask("one two three four five six")) as stream:
            for event in stream:
                seen.append(event)
                if len(seen) == 2:
                    break
        return seen

    with rewind.record(trace_path):
        live = agent()
        after = client.chat.complete(model=MODEL, messages=ask("next"))
    first, second = events(trace_path)
    assert first.get("stream")["truncated"] is True and len(first.get("stream")["chunks"]) == 2
    assert second.name == "mistral.chat.complete"
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live
        assert client.chat.complete(model=MODEL, messages=ask("next")) == after


def test_mid_stream_error_replays_after_the_same_events(client: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[Any], BaseException]:
        seen: list[Any] = []
        with pytest.raises(Exception) as info:
            for event in client.chat.stream(model=MODEL, messages=ask("x")):
                seen.append(event)
        return seen, info.value

    stub.add_script({"text": "one two three four five", "stream_error_after": 2})
    with rewind.record(trace_path):
        live_seen, live_error = agent()
    (event,) = events(trace_path)
    assert not event.ok and len(event.get("stream")["chunks"]) == len(live_seen)
    stub.stop()
    with rewind.replay(trace_path):
        seen, error = agent()
    assert seen == live_seen
    assert isinstance(error, ReplayedError) and str(error) == str(live_error)
    if type(live_error).__module__.startswith("mistralai"):  # 1.x raises pydantic's own ValidationError
        assert isinstance(error, type(live_error))


# --------------------------------------------------------------------------- async


async def test_async_complete_stream_and_embeddings(stub: StubServer, patched: None, trace_path: Path) -> None:
    c = Mistral(api_key=API_KEY, server_url=stub.mistral_base_url)

    async def agent() -> list[Any]:
        done = await c.chat.complete_async(model=MODEL, messages=ask("async hello"))
        stream = await c.chat.stream_async(model=MODEL, messages=ask("async stream"))
        assert isinstance(stream, ASYNC_STREAM)
        chunks = [event async for event in stream]
        vectors = await c.embeddings.create_async(model="mistral-embed", inputs=["a", "b"])
        return [done, chunks, vectors]

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await agent()
    assert replayed == live
    assert isinstance(replayed[0], models.ChatCompletionResponse)
    assert isinstance(replayed[1][0], models.CompletionEvent)
    assert isinstance(replayed[2], models.EmbeddingResponse)


async def test_async_stream_aborted_early(stub: StubServer, patched: None, trace_path: Path) -> None:
    c = Mistral(api_key=API_KEY, server_url=stub.mistral_base_url)

    async def agent() -> list[Any]:
        seen = []
        async with await c.chat.stream_async(model=MODEL, messages=ask("a b c d e f g")) as stream:
            async for event in stream:
                seen.append(event)
                if len(seen) == 3:
                    break
        return seen

    async with rewind.record(trace_path):
        live = await agent()
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent() == live


def test_sync_recording_replays_through_the_async_twin(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.chat.complete(model=MODEL, messages=ask("twin"))
    stub.stop()

    async def replay() -> Any:
        async with rewind.replay(trace_path):
            return await client.chat.complete_async(model=MODEL, messages=ask("twin"))

    assert asyncio.run(replay()) == live


# --------------------------------------------------------------------------- embeddings


def test_embeddings_replay(client: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.embeddings.create(model="mistral-embed", inputs=["alpha", "beta"])
    (event,) = events(trace_path)
    assert event.name == "mistral.embeddings.create"
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.embeddings.create(model="mistral-embed", inputs=["alpha", "beta"])
    assert replayed == live and isinstance(replayed, models.EmbeddingResponse)
    assert len(replayed.data) == 2


# --------------------------------------------------------------------------- errors


def test_rate_limit_replays_as_sdk_error_with_status_and_headers(
    client: Any, stub: StubServer, trace_path: Path
) -> None:
    def call() -> BaseException:
        with pytest.raises(errors.SDKError) as info:
            client.chat.complete(model=MODEL, messages=ask("limited"))
        return info.value

    with rewind.record(trace_path):
        stub.fail_next(status=429, headers={"retry-after": "3"})
        live = call()
    assert live.status_code == 429
    stub.stop()
    with rewind.replay(trace_path):
        replayed = call()
    assert isinstance(replayed, ReplayedError)
    assert replayed.status_code == 429 and replayed.body == live.body
    assert str(replayed) == str(live)
    assert replayed.raw_response.status_code == 429
    assert replayed.raw_response.headers["Retry-After"] == "3"
    if hasattr(live, "headers"):
        assert replayed.headers["retry-after"] == "3"
    repr(replayed)  # the SDK's dataclass repr reads every field


def test_validation_error_replays_with_its_data(client: Any, stub: StubServer, trace_path: Path) -> None:
    def call() -> BaseException:
        with pytest.raises(errors.HTTPValidationError) as info:
            client.embeddings.create(model="mistral-embed", inputs=["x"])
        return info.value

    with rewind.record(trace_path):
        stub.fail_next(status=422)
        live = call()
    stub.stop()
    with rewind.replay(trace_path):
        replayed = call()
    assert replayed.data == live.data and type(replayed.data) is type(live.data)
    assert str(replayed) == str(live)


async def test_async_error_replays(stub: StubServer, patched: None, trace_path: Path) -> None:
    c = Mistral(api_key=API_KEY, server_url=stub.mistral_base_url)
    async with rewind.record(trace_path):
        stub.fail_next(status=500)
        with pytest.raises(errors.SDKError):
            await c.chat.stream_async(model=MODEL, messages=ask("boom"))
    stub.stop()
    async with rewind.replay(trace_path):
        with pytest.raises(errors.SDKError) as info:
            await c.chat.stream_async(model=MODEL, messages=ask("boom"))
    assert info.value.status_code == 500


# --------------------------------------------------------------------------- secrets and spans


def test_api_key_never_reaches_trace_or_spans(
    client: Any, stub: StubServer, trace_path: Path, spans: InMemorySpanExporter
) -> None:
    with rewind.record(trace_path):
        client.chat.complete(model=MODEL, messages=ask("hi"), **HEADERS)
        list(client.chat.stream(model=MODEL, messages=ask("hi")))
        stub.fail_next(status=401)
        with pytest.raises(errors.SDKError):
            client.embeddings.create(model="mistral-embed", inputs=["x"])
    assert stub.requests[0].headers.get("authorization") == f"Bearer {API_KEY}"  # it did go on the wire
    assert API_KEY not in trace_path.read_text()
    blobs = trace_path.parent / (trace_path.name + ".blobs")
    for blob in blobs.rglob("*") if blobs.exists() else []:
        assert blob.is_dir() or API_KEY.encode() not in blob.read_bytes()
    # The calls' spans (the session's own invoke_agent span aside).
    finished = [s for s in spans.get_finished_spans() if s.name != "invoke_agent"]
    assert len(finished) == 3
    assert API_KEY not in json.dumps([dict(s.attributes or {}) for s in finished], default=str)
    chat = finished[0]
    assert chat.name == f"chat {MODEL}"
    attrs = dict(chat.attributes or {})
    assert attrs["gen_ai.provider.name"] == "mistral_ai"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == stub.port
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.response.finish_reasons"] == ("stop",)
    stream_attrs = dict(finished[1].attributes or {})
    assert stream_attrs["gen_ai.request.stream"] is True and stream_attrs["gen_ai.usage.output_tokens"] > 0
    assert dict(finished[2].attributes or {})["error.type"].endswith("SDKError")
