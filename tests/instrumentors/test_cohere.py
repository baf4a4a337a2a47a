"""``cohere`` recorded and replayed: the real SDK over loopback HTTP against the stub server.

Every test records against ``StubServer`` (Cohere v2 and v1 wire formats), stops the
server, and replays with no network: results must be equal and of the SDK's own types.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import types
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import cohere
import httpx
import pytest
from _native_support import TOOLS, ask, events, patching, spans_fixture  # noqa: F401 - a fixture
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rewind
from rewind.errors import DivergenceError, PatchGapWarning, ReplayedError
from rewind.stub_server import StubServer

API_KEY = "cohere-SECRET-key-never-in-a-trace"
MODEL = "command-a-03-2025"
DOCS = ["Paris is in France.", "Rome is in Italy.", "Berlin is in Germany."]
#: cohere before the raw-client layout: a bare ``except:`` around each stream event swallows GeneratorExit.
OLD_STREAMS = not hasattr(importlib.import_module("cohere.v2.client"), "RawV2Client")
#: Newer SDKs retry 429/5xx by default (older ones never do): errors must show at once.
NO_RETRIES = {"max_retries": 0} if "max_retries" in inspect.signature(cohere.ClientV2.__init__).parameters else {}


@pytest.fixture
def patched() -> Iterator[None]:
    yield from patching(rewind.patch_cohere)


@pytest.fixture
def co(stub: StubServer, patched: None) -> Iterator[Any]:
    client = cohere.ClientV2(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES)
    yield client


@pytest.fixture
def aco(stub: StubServer, patched: None) -> Iterator[Any]:
    yield cohere.AsyncClientV2(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES)


# --------------------------------------------------------------------------- v2 chat


def test_chat_tool_round_trip_replays_offline(co: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        first = co.chat(model=MODEL, messages=ask("weather in city=Paris"), tools=TOOLS)
        call = first.message.tool_calls[0]
        followup = [
            *ask("weather in city=Paris"),
            {"role": "assistant", "tool_calls": [call.model_dump(exclude_none=True)], "tool_plan": "look it up"},
            {"role": "tool", "tool_call_id": call.id, "content": [{"type": "text", "text": "sunny"}]},
        ]
        second = co.chat(model=MODEL, messages=followup, tools=TOOLS, temperature=0.3)
        return [first, second]

    with rewind.record(trace_path):
        live = agent()
    assert live[0].finish_reason == "TOOL_CALL" and live[0].message.tool_calls[0].function.name == "lookup"
    assert [e.name for e in events(trace_path)] == ["cohere.v2.chat"] * 2
    stub.stop()

    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live
    assert type(replayed[0]) is type(live[0]) and type(replayed[1]) is type(live[1])


def test_changed_request_raises_divergence(co: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        co.chat(model=MODEL, messages=ask("hello"))
    stub.stop()
    with pytest.raises(DivergenceError) as info, rewind.replay(trace_path):
        co.chat(model=MODEL, messages=ask("hello, changed"))
    assert info.value.step == 0
    assert "cohere.v2.chat" in str(info.value) and "messages[0].content" in str(info.value)


def test_v2_namespace_of_a_v1_client_is_the_same_call(stub: StubServer, patched: None, trace_path: Path) -> None:
    v1 = cohere.Client(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES)
    with rewind.record(trace_path):
        live = v1.v2.chat(model=MODEL, messages=ask("via v1"))
    stub.stop()
    co = cohere.ClientV2(api_key=API_KEY, base_url="http://127.0.0.1:9")  # nothing listens: replay only
    with rewind.replay(trace_path):
        assert co.chat(model=MODEL, messages=ask("via v1")) == live


# --------------------------------------------------------------------------- streams


def test_chat_stream_replays_the_sdks_event_objects(co: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        stream = co.chat_stream(model=MODEL, messages=ask("stream this please"))
        assert isinstance(stream, types.GeneratorType)
        return list(stream)

    with rewind.record(trace_path):
        live = agent()
    (event,) = events(trace_path)
    assert event.name == "cohere.v2.chat_stream" and event.get("stream")["truncated"] is False
    assert event.response["finish_reason"] == "COMPLETE"
    assert "".join(c["text"] for c in event.response["message"]["content"]) == "Echo: stream this please"
    stub.stop()

    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live
    assert [type(e) for e in replayed] == [type(e) for e in live]
    assert {e.type for e in replayed} >= {"message-start", "content-delta", "message-end"}


def test_chat_stream_with_tool_calls(co: Any, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = list(co.chat_stream(model=MODEL, messages=ask("look city=Rome up"), tools=TOOLS))
    (event,) = events(trace_path)
    (call,) = event.response["message"]["tool_calls"]
    assert call["function"]["name"] == "lookup" and json.loads(call["function"]["arguments"])["city"] == "Rome"
    stub.stop()
    with rewind.replay(trace_path):
        assert list(co.chat_stream(model=MODEL, messages=ask("look city=Rome up"), tools=TOOLS)) == live


def test_chat_stream_aborted_early(co: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        seen = []
        stream = co.chat_stream(model=MODEL, messages=ask("one two three four five six"))
        for event in stream:
            seen.append(event)
            if len(seen) == 3:
                break
        if OLD_STREAMS:
            del stream  # closing 5.13's stream raises: its generator swallows GeneratorExit
        else:
            stream.close()
        return seen

    with rewind.record(trace_path):
        live = agent()
        after = co.chat(model=MODEL, messages=ask("next"))
    first, _ = events(trace_path)
    assert first.get("stream")["truncated"] is True and len(first.get("stream")["chunks"]) == 3
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live
        assert co.chat(model=MODEL, messages=ask("next")) == after


def test_connection_dropped_mid_stream_replays_after_the_same_events(
    co: Any, stub: StubServer, trace_path: Path
) -> None:
    def agent() -> tuple[list[Any], BaseException]:
        seen: list[Any] = []
        with pytest.raises(httpx.HTTPError) as info:
            for event in co.chat_stream(model=MODEL, messages=ask("x")):
                seen.append(event)
        return seen, info.value

    stub.add_script({"text": "one two three four five", "stream_error_after": 2})
    with rewind.record(trace_path):
        live_seen, live_error = agent()
    (event,) = events(trace_path)
    assert not event.ok and len(event.get("stream")["chunks"]) == len(live_seen) > 0
    stub.stop()
    with rewind.replay(trace_path):
        seen, error = agent()
    assert seen == live_seen
    assert isinstance(error, ReplayedError) and isinstance(error, type(live_error))


# --------------------------------------------------------------------------- async


async def test_async_chat_stream_embed_rerank(aco: Any, stub: StubServer, trace_path: Path) -> None:
    async def agent() -> list[Any]:
        done = await aco.chat(model=MODEL, messages=ask("async hello"))
        stream = aco.chat_stream(model=MODEL, messages=ask("async stream"))
        assert isinstance(stream, AsyncIterator)
        chunks = [event async for event in stream]
        vectors = await aco.embed(
            model="embed-v4.0", texts=["a", "b"], input_type="search_document", embedding_types=["float"]
        )
        ranked = await aco.rerank(model="rerank-v3.5", query="Italy", documents=DOCS, top_n=2)
        return [done, chunks, vectors, ranked]

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await agent()
    assert replayed == live
    assert [type(x) for x in replayed] == [type(x) for x in live]
    assert type(replayed[1][0]) is type(live[1][0])


async def test_async_stream_aborted_and_async_error(aco: Any, stub: StubServer, trace_path: Path) -> None:
    async def agent(before_rerank: Any) -> tuple[list[Any], int]:
        seen = []
        stream = aco.chat_stream(model=MODEL, messages=ask("a b c d e f g"))
        async for event in stream:
            seen.append(event)
            if len(seen) == 2:
                break
        if OLD_STREAMS:
            del stream
        else:
            await stream.aclose()
        before_rerank()
        with pytest.raises(cohere.errors.TooManyRequestsError) as info:
            await aco.rerank(model="rerank-v3.5", query="q", documents=DOCS)
        return seen, int(info.value.status_code)

    async with rewind.record(trace_path):
        live = await agent(lambda: stub.fail_next(status=429))
    first, second = events(trace_path)
    assert first.get("stream")["truncated"] is True and len(first.get("stream")["chunks"]) == 2
    assert not second.ok
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent(lambda: None) == live


# --------------------------------------------------------------------------- embed and rerank


def test_v2_embed_and_rerank(co: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        vectors = co.embed(
            model="embed-v4.0", texts=["alpha", "beta"], input_type="search_query", embedding_types=["float", "int8"]
        )
        ranked = co.rerank(model="rerank-v3.5", query="Germany", documents=DOCS)
        return [vectors, ranked]

    with rewind.record(trace_path):
        live = agent()
    assert [e.name for e in events(trace_path)] == ["cohere.v2.embed", "cohere.v2.rerank"]
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live and [type(x) for x in replayed] == [type(x) for x in live]
    assert len(replayed[0].embeddings.float_) == 2


def test_v1_embed_and_rerank(stub: StubServer, patched: None, trace_path: Path) -> None:
    v1 = cohere.Client(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES)

    def agent() -> list[Any]:
        vectors = v1.embed(model="embed-english-v3.0", texts=["alpha", "beta"], input_type="search_query")
        ranked = v1.rerank(model="rerank-v3.5", query="France", documents=DOCS)
        return [vectors, ranked]

    with rewind.record(trace_path):
        live = agent()
    assert [e.name for e in events(trace_path)] == ["cohere.v1.embed", "cohere.v1.rerank"]  # one step per call
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live and [type(x) for x in replayed] == [type(x) for x in live]


async def test_async_v1_embed_and_rerank(stub: StubServer, patched: None, trace_path: Path) -> None:
    v1 = cohere.AsyncClient(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES)

    async def agent() -> list[Any]:
        vectors = await v1.embed(model="embed-english-v3.0", texts=["alpha"], input_type="search_query")
        ranked = await v1.rerank(model="rerank-v3.5", query="France", documents=DOCS)
        return [vectors, ranked]

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent() == live


# --------------------------------------------------------------------------- errors


def test_rate_limit_replays_as_the_sdks_error_class(co: Any, stub: StubServer, trace_path: Path) -> None:
    def call() -> Any:
        with pytest.raises(cohere.errors.TooManyRequestsError) as info:
            co.chat(model=MODEL, messages=ask("limited"))
        return info.value

    with rewind.record(trace_path):
        stub.fail_next(status=429, headers={"retry-after": "4"})
        live = call()
    stub.stop()
    with rewind.replay(trace_path):
        replayed = call()
    assert isinstance(replayed, ReplayedError) and isinstance(replayed, cohere.core.api_error.ApiError)
    assert replayed.status_code == live.status_code == 429
    assert replayed.body == live.body
    if getattr(live, "headers", None) is not None:
        assert replayed.headers["retry-after"] == "4"


def test_error_opening_a_stream_replays_on_first_read(co: Any, stub: StubServer, trace_path: Path) -> None:
    def agent() -> int:
        stream = co.chat_stream(model=MODEL, messages=ask("busy"))
        with pytest.raises(cohere.core.api_error.ApiError) as info:
            next(stream)
        return int(info.value.status_code)

    with rewind.record(trace_path):
        stub.fail_next(status=500)
        assert agent() == 500
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == 500


# --------------------------------------------------------------------------- construction order


@pytest.mark.skipif(OLD_STREAMS, reason="cohere < 5.16 has no raw client: chats of early clients only warn")
def test_client_built_before_patching_is_recorded(stub: StubServer, trace_path: Path) -> None:
    def clients() -> tuple[Any, Any]:
        return (
            cohere.ClientV2(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES),
            cohere.AsyncClientV2(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES),
        )

    def agent(co: Any, aco: Any) -> list[Any]:
        async def async_part() -> list[Any]:
            done = await aco.chat(model=MODEL, messages=ask("early async"))
            return [done, [event async for event in aco.chat_stream(model=MODEL, messages=ask("early astream"))]]

        return [
            co.chat(model=MODEL, messages=ask("early")),
            list(co.chat_stream(model=MODEL, messages=ask("early stream"))),
            co.embed(model="embed-v4.0", texts=["x"], input_type="search_query", embedding_types=["float"]),
            *asyncio.run(async_part()),
        ]

    early = clients()
    unpatch = rewind.patch_cohere()
    try:
        with rewind.record(trace_path):
            live = agent(*early)
        assert [e.name for e in events(trace_path)] == [
            "cohere.v2.chat",
            "cohere.v2.chat_stream",
            "cohere.v2.embed",
            "cohere.v2.chat",
            "cohere.v2.chat_stream",
        ]
        stub.stop()
        with rewind.replay(trace_path):
            assert agent(*early) == live
        # The same recording replays through clients built after patching: one identity for both.
        with rewind.replay(trace_path):
            assert agent(*clients()) == live
    finally:
        unpatch()


@pytest.mark.skipif(not OLD_STREAMS, reason="this cohere records chats of early clients")
def test_client_built_before_patching_warns_on_old_sdks(stub: StubServer, trace_path: Path) -> None:
    early = cohere.ClientV2(api_key=API_KEY, base_url=stub.cohere_base_url, **NO_RETRIES)
    unpatch = rewind.patch_cohere()
    try:
        with rewind.record(trace_path):
            vectors = early.embed(model="embed-v4.0", texts=["x"], input_type="search_query", embedding_types=["float"])
            with pytest.warns(PatchGapWarning, match="constructed before patch_cohere"):
                early.chat(model=MODEL, messages=ask("missed"))
        # embed is recorded; the early client's chat ran live, unrecorded, as the warning said.
        assert [e.name for e in events(trace_path)] == ["cohere.v2.embed"]
        stub.stop()
        with rewind.replay(trace_path):
            again = early.embed(model="embed-v4.0", texts=["x"], input_type="search_query", embedding_types=["float"])
        assert again == vectors
    finally:
        unpatch()


# --------------------------------------------------------------------------- secrets and spans


def test_api_key_never_reaches_trace_or_spans(
    co: Any, stub: StubServer, trace_path: Path, spans: InMemorySpanExporter
) -> None:
    options = {"additional_headers": {"Authorization": f"Bearer {API_KEY}"}}
    with rewind.record(trace_path):
        co.chat(model=MODEL, messages=ask("hi"), request_options=options)
        list(co.chat_stream(model=MODEL, messages=ask("hi")))
        stub.fail_next(status=401)
        with pytest.raises(cohere.core.api_error.ApiError):
            co.rerank(model="rerank-v3.5", query="q", documents=DOCS)
    assert stub.requests[0].headers.get("authorization") == f"Bearer {API_KEY}"  # it did go on the wire
    assert API_KEY not in trace_path.read_text()
    # The calls' spans (the session's own invoke_agent span aside).
    finished = [s for s in spans.get_finished_spans() if s.name != "invoke_agent"]
    assert len(finished) == 3
    assert API_KEY not in json.dumps([dict(s.attributes or {}) for s in finished], default=str)
    attrs = dict(finished[0].attributes or {})
    assert finished[0].name == f"chat {MODEL}"
    assert attrs["gen_ai.provider.name"] == "cohere" and attrs["gen_ai.operation.name"] == "chat"
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == stub.port
    assert attrs["gen_ai.response.finish_reasons"] == ("COMPLETE",) and attrs["gen_ai.usage.input_tokens"] > 0
    stream_attrs = dict(finished[1].attributes or {})
    assert stream_attrs["gen_ai.request.stream"] is True and stream_attrs["gen_ai.usage.output_tokens"] > 0
    rerank = dict(finished[2].attributes or {})
    assert rerank["gen_ai.operation.name"] == "rerank" and rerank["error.type"].endswith("Error")
