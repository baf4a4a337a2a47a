"""Streamed chat completions: lazy recording, every abort path, mid-stream errors, helpers, raw."""

from __future__ import annotations

import gc
from pathlib import Path

import openai
import pytest
from _openai_support import MODEL, ask, chat_stream, events

import rewind
from rewind.stub_server import StubServer

LONG = "one two three four five six seven eight nine ten"


def _texts(chunks: list) -> list:
    return [c.choices[0].delta.content if c.choices else None for c in chunks]


def test_stream_records_every_chunk_and_replays_real_chunk_objects(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        stream = client.chat.completions.create(model=MODEL, messages=ask("count"), stream=True)
        assert isinstance(stream, openai.Stream)
        live = list(stream)
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is False
    assert len(event.get("stream")["chunks"]) == len(live)
    assert event.response["choices"][0]["message"]["content"] == LONG  # the accumulated completion
    stub.stop()

    with rewind.replay(trace_path):
        replayed_stream = client.chat.completions.create(model=MODEL, messages=ask("count"), stream=True)
        assert isinstance(replayed_stream, openai.Stream)
        with replayed_stream as entered:
            assert entered is replayed_stream
            replayed = list(entered)
    assert all(type(c) is openai.types.chat.ChatCompletionChunk for c in replayed)
    assert replayed == live


async def test_async_stream_replays_with_async_for(aclient, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    async with rewind.record(trace_path):
        stream = await aclient.chat.completions.create(model=MODEL, messages=ask("count"), stream=True)
        assert isinstance(stream, openai.AsyncStream)
        live = [chunk async for chunk in stream]
    stub.stop()
    async with rewind.replay(trace_path):
        stream = await aclient.chat.completions.create(model=MODEL, messages=ask("count"), stream=True)
        assert isinstance(stream, openai.AsyncStream)
        async with stream as entered:
            replayed = [chunk async for chunk in entered]
    assert replayed == live


def test_break_records_exactly_the_chunks_seen_as_truncated(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        stream = client.chat.completions.create(model=MODEL, messages=ask("count"), stream=True)
        seen = []
        for chunk in stream:
            seen.append(chunk)
            if len(seen) == 3:
                break
        stream.close()
        assert stream.response.is_closed  # the connection went with it
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True
    assert len(event.get("stream")["chunks"]) == 3
    stub.stop()
    with rewind.replay(trace_path):
        replayed = list(client.chat.completions.create(model=MODEL, messages=ask("count"), stream=True))
    assert replayed == seen


def test_with_exit_and_abandonment_finalize_once(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG, LONG)
    with (
        rewind.record(trace_path),
        client.chat.completions.create(model=MODEL, messages=ask("with"), stream=True) as stream,
    ):
        next(iter(stream))
        abandoned = client.chat.completions.create(model=MODEL, messages=ask("abandoned"), stream=True)
        next(abandoned)
        next(abandoned)
        connection = abandoned.response
        del abandoned
        gc.collect()
        assert connection.is_closed
    first, second = events(trace_path)
    assert first.get("stream") == {"chunks": first.get("stream")["chunks"], "truncated": True}
    assert len(first.get("stream")["chunks"]) == 1
    assert second.get("stream")["truncated"] is True and len(second.get("stream")["chunks"]) == 2


def test_consumer_exception_records_truncated_stream(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with (
        rewind.record(trace_path), pytest.raises(ZeroDivisionError),
        client.chat.completions.create(model=MODEL, messages=ask("boom"), stream=True) as stream,
    ):
        for index, _chunk in enumerate(stream):
            if index == 1:
                raise ZeroDivisionError
    (event,) = events(trace_path)
    assert event.ok and event.get("stream")["truncated"] is True
    assert len(event.get("stream")["chunks"]) == 2


def test_error_mid_stream_replays_after_the_same_chunks(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"text": LONG, "stream_error_after": 2, "error": {"status": 500, "message": "overloaded"}})
    with rewind.record(trace_path):
        stream = client.chat.completions.create(model=MODEL, messages=ask("fail"), stream=True)
        seen = []
        with pytest.raises(openai.APIError) as live_error:
            for chunk in stream:
                seen.append(chunk)
    (event,) = events(trace_path)
    assert not event.ok and event.get("stream")["chunks"]
    stub.stop()
    with rewind.replay(trace_path):
        stream = client.chat.completions.create(model=MODEL, messages=ask("fail"), stream=True)
        replayed = []
        with pytest.raises(openai.APIError) as replayed_error:
            for chunk in stream:
                replayed.append(chunk)
    assert replayed == seen
    assert isinstance(replayed_error.value, rewind.ReplayedError)
    assert str(replayed_error.value) == str(live_error.value)


async def test_async_error_mid_stream(aclient, stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"text": LONG, "stream_error_after": 1})
    async with rewind.record(trace_path):
        stream = await aclient.chat.completions.create(model=MODEL, messages=ask("fail"), stream=True)
        with pytest.raises(openai.APIError):
            async for _ in stream:
                pass
    stub.stop()
    async with rewind.replay(trace_path):
        stream = await aclient.chat.completions.create(model=MODEL, messages=ask("fail"), stream=True)
        count = 0
        with pytest.raises(openai.APIError):
            async for _ in stream:
                count += 1
    assert count == len(events(trace_path)[0].get("stream")["chunks"])


def test_include_usage_is_in_the_summary(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        list(
            client.chat.completions.create(
                model=MODEL, messages=ask("usage"), stream=True, stream_options={"include_usage": True}
            )
        )
    (event,) = events(trace_path)
    assert event.response["usage"]["total_tokens"] > 0


def test_stream_helper_replays_events_and_final_completion(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    with rewind.record(trace_path), chat_stream(client)(model=MODEL, messages=ask("helper"), tools=tools) as stream:
        live_events = [event.type for event in stream]
        live_final = stream.get_final_completion()
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is False
    summary_call = event.response["choices"][0]["message"]["tool_calls"][0]
    assert summary_call["function"] == {"name": "lookup", "arguments": '{"q": "x"}'}
    assert event.response["choices"][0]["finish_reason"] == "tool_calls"
    stub.stop()
    with rewind.replay(trace_path), chat_stream(client)(model=MODEL, messages=ask("helper"), tools=tools) as stream:
        replayed_events = [event.type for event in stream]
        replayed_final = stream.get_final_completion()
    assert replayed_events == live_events
    assert replayed_final == live_final
    assert replayed_final.choices[0].message.tool_calls[0].function.name == "lookup"


def test_stream_helper_exit_before_the_end_is_truncated(client, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path), chat_stream(client)(model=MODEL, messages=ask("helper")) as stream:
        next(iter(stream))
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True


async def test_async_stream_helper(aclient, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path), chat_stream(aclient)(model=MODEL, messages=ask("async helper")) as stream:
        live = await stream.get_final_completion()
    stub.stop()
    async with rewind.replay(trace_path), chat_stream(aclient)(model=MODEL, messages=ask("async helper")) as stream:
        replayed = await stream.get_final_completion()
    assert replayed == live


def test_with_raw_response_stream_parse(client, stub: StubServer, trace_path: Path) -> None:
    """LangChain's streaming path: with_raw_response.create(stream=True) then .parse()."""
    with rewind.record(trace_path):
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("lc"), stream=True)
        live = list(raw.parse())
    stub.stop()
    with rewind.replay(trace_path):
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("lc"), stream=True)
        assert raw.headers.get("content-type", "").startswith("text/event-stream")
        replayed = list(raw.parse())
    assert replayed == live


def test_with_streaming_response_iter_lines_records_and_replays(client, stub, trace_path: Path) -> None:
    with rewind.record(trace_path), client.chat.completions.with_streaming_response.create(
        model=MODEL, messages=ask("sse"), stream=True
    ) as response:
        live_lines = [line for line in response.iter_lines() if line]
    (event,) = events(trace_path)
    assert [c["object"] for c in event.get("stream")["chunks"]] == ["chat.completion.chunk"] * (len(live_lines) - 1)
    stub.stop()
    with rewind.replay(trace_path), client.chat.completions.with_streaming_response.create(
        model=MODEL, messages=ask("sse"), stream=True
    ) as response:
        chunks = list(response.parse())
    assert _texts(chunks)[1] == "Echo:"


async def test_async_with_raw_response_stream_parse(aclient, stub: StubServer, trace_path: Path) -> None:
    """LangChain's async streaming path: the raw wrapper's sync parse() hands out an AsyncStream."""
    async with rewind.record(trace_path):
        raw = await aclient.chat.completions.with_raw_response.create(model=MODEL, messages=ask("lc"), stream=True)
        live = [chunk async for chunk in raw.parse()]
    stub.stop()
    async with rewind.replay(trace_path):
        raw = await aclient.chat.completions.with_raw_response.create(model=MODEL, messages=ask("lc"), stream=True)
        stream = raw.parse()
        assert isinstance(stream, openai.AsyncStream)
        replayed = [chunk async for chunk in stream]
    assert replayed == live
