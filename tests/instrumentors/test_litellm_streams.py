"""litellm streams (``stream=True``): sync and async iteration, early aborts, mid-stream errors."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import openai
import pytest
from _litellm_support import (  # noqa: F401 - patched_litellm is a fixture
    MODEL,
    TOOLS,
    ask,
    events,
    litellm,
    openai_route,
    patched_litellm,
    same,
)

import rewind
from rewind.stub_server import StubServer

pytestmark = pytest.mark.usefixtures("patched_litellm")

LONG = "one two three four five six seven eight nine ten"


def _stream(stub: StubServer, text: str, **more: Any) -> Any:
    return litellm.completion(model=MODEL, messages=ask(text), stream=True, **openai_route(stub), **more)


def _wrapper_type() -> type:
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper

    return CustomStreamWrapper


def test_stream_replays_litellm_chunks_from_a_custom_stream_wrapper(stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        stream = _stream(stub, "count", stream_options={"include_usage": True})
        assert isinstance(stream, _wrapper_type())
        live = list(stream)
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is False and len(event.get("stream")["chunks"]) == len(live)
    assert event.response["choices"][0]["message"]["content"] == LONG  # the accumulated completion
    stub.stop()

    with rewind.replay(trace_path):
        stream = _stream(stub, "count", stream_options={"include_usage": True})
        assert isinstance(stream, _wrapper_type()) and stream.model == live_model(live)
        replayed = list(stream)
    assert [type(c) for c in replayed] == [type(c) for c in live]
    assert same(replayed, live)  # fields and each chunk's private state
    assert replayed[-1]._hidden_params.get("usage") == live[-1]._hidden_params.get("usage")
    rebuilt = litellm.stream_chunk_builder(replayed)
    assert rebuilt.choices[0].message.content == LONG
    assert rebuilt.usage.total_tokens == litellm.stream_chunk_builder(live).usage.total_tokens


def live_model(chunks: list) -> str:
    return chunks[0].model


def test_streamed_tool_calls(stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})
    with rewind.record(trace_path):
        live = list(_stream(stub, "weather", tools=TOOLS))
    stub.stop()
    with rewind.replay(trace_path):
        replayed = list(_stream(stub, "weather", tools=TOOLS))
    assert same(replayed, live)
    call = litellm.stream_chunk_builder(replayed).choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and '"Oslo"' in call.function.arguments


def test_async_stream_with_async_for(stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)

    async def agent() -> list:
        stream = await litellm.acompletion(model=MODEL, messages=ask("count"), stream=True, **openai_route(stub))
        assert isinstance(stream, _wrapper_type())
        return [chunk async for chunk in stream]

    async def record() -> list:
        async with rewind.record(trace_path):
            return await agent()

    async def replay() -> list:
        async with rewind.replay(trace_path):
            return await agent()

    live = asyncio.run(record())
    stub.stop()
    replayed = asyncio.run(replay())
    assert [type(c) for c in replayed] == [type(c) for c in live]
    # litellm's background logging may still add to a live chunk's private state after the
    # stream ended; the fields are what the agent read.
    assert [c.model_dump() for c in replayed] == [c.model_dump() for c in live]
    assert "".join(c.choices[0].delta.content or "" for c in replayed) == LONG


def test_break_then_drop_records_exactly_the_chunks_seen_as_truncated(stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        seen = []
        for chunk in _stream(stub, "count"):  # the stream is dropped when the loop breaks
            seen.append(chunk)
            if len(seen) == 3:
                break
        gc.collect()
    (event,) = events(trace_path)
    assert event.ok and event.get("stream")["truncated"] is True
    assert len(event.get("stream")["chunks"]) == 3
    stub.stop()
    with rewind.replay(trace_path):
        replayed = list(_stream(stub, "count"))
    assert same(replayed, seen)


def test_close_and_with_exit_finalize_once(stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG, LONG)
    with rewind.record(trace_path):
        stream = _stream(stub, "close")
        next(stream)
        stream.close()
        with _stream(stub, "with") as entered:
            next(entered)
            next(entered)
    first, second = events(trace_path)
    assert first.get("stream")["truncated"] and len(first.get("stream")["chunks"]) == 1
    assert second.get("stream")["truncated"] and len(second.get("stream")["chunks"]) == 2


def test_async_stream_aborted_early(stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)

    async def agent() -> list:
        stream = await litellm.acompletion(model=MODEL, messages=ask("count"), stream=True, **openai_route(stub))
        seen = []
        async for chunk in stream:
            seen.append(chunk)
            if len(seen) == 2:
                break
        await stream.aclose()
        return seen

    async def record() -> list:
        async with rewind.record(trace_path):
            return await agent()

    async def replay() -> list:
        async with rewind.replay(trace_path):
            return await agent()

    live = asyncio.run(record())
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True and len(event.get("stream")["chunks"]) == 2
    stub.stop()
    assert [c.model_dump() for c in asyncio.run(replay())] == [c.model_dump() for c in live]


def test_error_mid_stream_replays_after_the_same_chunks(stub: StubServer, trace_path: Path) -> None:
    stub.add_script({"text": LONG, "stream_error_after": 2, "error": {"status": 500, "message": "overloaded"}})
    with rewind.record(trace_path):
        seen = []
        with pytest.raises(openai.OpenAIError) as live_error:  # litellm maps it by version
            for chunk in _stream(stub, "fail"):
                seen.append(chunk)
    (event,) = events(trace_path)
    assert not event.ok and event.get("stream")["chunks"]
    stub.stop()
    with rewind.replay(trace_path):
        replayed = []
        with pytest.raises(type(live_error.value)) as replayed_error:  # the very class live raised
            for chunk in _stream(stub, "fail"):
                replayed.append(chunk)
    assert same(replayed, seen)
    assert isinstance(replayed_error.value, rewind.ReplayedError)
    assert str(replayed_error.value) == str(live_error.value)
