"""Streamed Anthropic calls: raw event streams, the messages.stream helper, tool input deltas, aborts, raw SSE."""

from __future__ import annotations

import gc
import inspect
import json
from pathlib import Path
from typing import Any

import anthropic
from _anthropic_support import (
    LONG,
    MODEL,
    THINKING,
    TOOLS,
    ask,
    events,
    needs_beta_stream,
    needs_thinking,
)

import rewind
from rewind.stub_server import StubServer

RAW_TYPES = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
}


def _dicts(items: list[Any]) -> list[Any]:
    return [item.to_dict() for item in items]


def test_create_stream_records_raw_events_and_replays_them(claude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        stream = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True)
        assert isinstance(stream, anthropic.Stream)
        live = list(stream)
    (event,) = events(trace_path)
    record = event.get("stream")
    assert record["truncated"] is False and len(record["chunks"]) == len(live)
    assert {chunk["type"] for chunk in record["chunks"]} == RAW_TYPES  # raw events only, no "ping"
    assert event.response["content"] == [{"type": "text", "text": LONG}]  # the accumulated message
    assert event.response["stop_reason"] == "end_turn" and event.response["usage"]["output_tokens"] == 10
    stub.stop()

    with rewind.replay(trace_path):
        replayed_stream = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True)
        assert isinstance(replayed_stream, anthropic.Stream)
        with replayed_stream as entered:
            assert entered is replayed_stream
            replayed = list(entered)
    assert [type(e) for e in replayed] == [type(e) for e in live]
    assert _dicts(replayed) == _dicts(live)


async def test_async_create_stream_replays_with_async_for(aclaude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    async with rewind.record(trace_path):
        stream = await aclaude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True)
        assert isinstance(stream, anthropic.AsyncStream)
        live = [item async for item in stream]
    stub.stop()
    async with rewind.replay(trace_path):
        stream = await aclaude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True)
        assert isinstance(stream, anthropic.AsyncStream)
        async with stream as entered:
            replayed = [item async for item in entered]
    assert _dicts(replayed) == _dicts(live)


def _helper_run(client: Any, **extra: Any) -> dict[str, Any]:
    with client.messages.stream(model=MODEL, max_tokens=2048, messages=ask("go"), **extra) as stream:
        seen = [(type(e).__name__, e.type) for e in stream]
        return {"events": seen, "final": stream.get_final_message(), "text": stream.get_final_text()}


def test_stream_helper_replays_every_event_and_the_final_message(claude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        live = _helper_run(claude)
    (event,) = events(trace_path)
    # One identity for the helper and create(stream=True): what goes on the wire.
    assert event.name == "anthropic.messages.create" and event.request["stream"] is True
    assert {chunk["type"] for chunk in event.get("stream")["chunks"]} == RAW_TYPES
    assert ("TextEvent", "text") in live["events"]  # derived by the SDK from the raw events
    stub.stop()

    with rewind.replay(trace_path):
        replayed = _helper_run(claude)
    assert replayed["events"] == live["events"]  # the SDK's MessageStream derives them again
    assert replayed["text"] == live["text"] == LONG
    assert replayed["final"].to_dict() == live["final"].to_dict()
    assert type(replayed["final"]) is type(live["final"])


def test_stream_helper_text_stream_replays(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[str], Any]:
        with claude.messages.stream(model=MODEL, max_tokens=64, messages=ask("words")) as stream:
            return list(stream.text_stream), stream.get_final_message()

    with rewind.record(trace_path):
        live_text, live_final = agent()
    stub.stop()
    with rewind.replay(trace_path):
        text, final = agent()
    assert text == live_text == ["Echo:", " words"]
    assert final.to_dict() == live_final.to_dict()


async def test_async_stream_helper_replays(aclaude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)

    async def agent() -> tuple[list[str], Any, str]:
        async with aclaude.messages.stream(model=MODEL, max_tokens=64, messages=ask("go")) as stream:
            text = [piece async for piece in stream.text_stream]
            return text, await stream.get_final_message(), await stream.get_final_text()

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await agent()
    assert replayed[0] == live[0] and replayed[2] == LONG
    assert replayed[1].to_dict() == live[1].to_dict()


def test_tool_use_input_json_deltas_round_trip(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> dict[str, Any]:
        return _helper_run_tools(claude)

    with rewind.record(trace_path):
        live = agent()
    (event,) = events(trace_path)
    deltas = [c["delta"] for c in event.get("stream")["chunks"] if c["type"] == "content_block_delta"]
    assert any(d["type"] == "input_json_delta" for d in deltas)
    tool_use = event.response["content"][-1]
    assert tool_use["type"] == "tool_use" and tool_use["input"] == {"query": "otel replay"}
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed["events"] == live["events"]
    block = replayed["final"].content[-1]
    assert isinstance(block, anthropic.types.ToolUseBlock) and block.input == {"query": "otel replay"}


def _helper_run_tools(client: Any) -> dict[str, Any]:
    with client.messages.stream(model=MODEL, max_tokens=256, tools=TOOLS, messages=ask('search "otel replay"')) as s:
        seen = [(type(e).__name__, e.type) for e in s]
        return {"events": seen, "final": s.get_final_message()}


@needs_thinking
def test_thinking_stream_round_trips(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = _helper_run(claude, thinking=THINKING)
    (event,) = events(trace_path)
    thinking = event.response["content"][0]
    assert thinking["type"] == "thinking" and thinking["signature"] and thinking["thinking"].startswith("The user")
    stub.stop()
    with rewind.replay(trace_path):
        replayed = _helper_run(claude, thinking=THINKING)
    assert replayed["events"] == live["events"]
    assert ("ThinkingEvent", "thinking") in replayed["events"]
    block = replayed["final"].content[0]
    assert isinstance(block, anthropic.types.ThinkingBlock) and block.signature == live["final"].content[0].signature


def test_helper_recording_replays_through_create_stream(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path), claude.messages.stream(model=MODEL, max_tokens=64, messages=ask("same wire")) as s:
        live_text = s.get_final_text()
    stub.stop()
    with rewind.replay(trace_path):
        raw = list(claude.messages.create(model=MODEL, max_tokens=64, messages=ask("same wire"), stream=True))
    text = "".join(e.delta.text for e in raw if e.type == "content_block_delta")
    assert text == live_text


# --------------------------------------------------------------------------- aborted streams


def test_break_records_exactly_the_events_seen_as_truncated(claude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        stream = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True)
        seen = []
        for item in stream:
            seen.append(item)
            if len(seen) == 4:
                break
        stream.close()
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True
    assert len(event.get("stream")["chunks"]) == 4
    assert event.response["content"][0]["text"] == "one two"  # what the agent saw
    stub.stop()
    with rewind.replay(trace_path):
        replayed = list(claude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True))
    assert _dicts(replayed) == _dicts(seen)


def test_helper_exited_early_is_truncated(claude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)

    def agent() -> list[str]:
        words = []
        with claude.messages.stream(model=MODEL, max_tokens=64, messages=ask("count")) as stream:
            for word in stream.text_stream:
                words.append(word)
                if len(words) == 3:
                    break
        return words

    with rewind.record(trace_path):
        live = agent()
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True
    assert event.response["content"][0]["text"] == "one two three"
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live == ["one", " two", " three"]


async def test_async_helper_exited_early_is_truncated(aclaude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    async with (
        rewind.record(trace_path),
        aclaude.messages.stream(model=MODEL, max_tokens=64, messages=ask("count")) as stream,
    ):
        async for word in stream.text_stream:
            assert word == "one"
            break
    (event,) = events(trace_path)
    assert event.get("stream")["truncated"] is True and event.response["content"][0]["text"] == "one"


def test_abandoned_stream_is_finalized_as_truncated(claude, stub: StubServer, trace_path: Path) -> None:
    stub.add_script(LONG)
    with rewind.record(trace_path):
        stream = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("count"), stream=True)
        next(iter(stream))
        del stream
        gc.collect()
        claude.messages.create(model=MODEL, max_tokens=64, messages=ask("after"))
    first, second = events(trace_path)
    assert first.get("stream")["truncated"] is True and len(first.get("stream")["chunks"]) == 1
    assert second.seq == 1 and second.response["content"][0]["text"] == "Echo: after"


# --------------------------------------------------------------------------- raw SSE


def test_with_streaming_response_raw_sse_replays(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[Any], str]:
        with claude.messages.with_streaming_response.create(
            model=MODEL, max_tokens=64, messages=ask("raw sse"), stream=True
        ) as response:
            request_id = response.headers.get("request-id", "")
            return [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")], request_id

    with rewind.record(trace_path):
        live, _ = agent()
    (event,) = events(trace_path)
    assert [c["type"] for c in event.get("stream")["chunks"]] == [c["type"] for c in live]
    stub.stop()
    with rewind.replay(trace_path):
        replayed, _ = agent()
    assert [c for c in replayed if c["type"] != "ping"] == [c for c in live if c["type"] != "ping"]


def test_with_streaming_response_parse_yields_real_events(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[Any]:
        with claude.messages.with_streaming_response.create(
            model=MODEL, max_tokens=64, messages=ask("parsed sse"), stream=True
        ) as response:
            return _dicts(list(response.parse()))

    with rewind.record(trace_path):
        live = agent()
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live


# --------------------------------------------------------------------------- beta


@needs_beta_stream
def test_beta_stream_helper_replays(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[str], Any]:
        with claude.beta.messages.stream(model=MODEL, max_tokens=64, messages=ask("beta"), betas=["x-1"]) as s:
            return list(s.text_stream), s.get_final_message()

    with rewind.record(trace_path):
        live_text, live_final = agent()
    (event,) = events(trace_path)
    assert event.name == "anthropic.beta.messages.create" and event.request["stream"] is True
    stub.stop()
    with rewind.replay(trace_path):
        text, final = agent()
    assert text == live_text and type(final) is type(live_final)
    assert final.to_dict() == live_final.to_dict()


@needs_beta_stream
async def test_async_beta_stream_and_create_stream_replay(aclaude, stub: StubServer, trace_path: Path) -> None:
    async def agent() -> tuple[str, list[Any]]:
        async with aclaude.beta.messages.stream(model=MODEL, max_tokens=64, messages=ask("beta")) as stream:
            text = await stream.get_final_text()
        raw = await aclaude.beta.messages.create(model=MODEL, max_tokens=64, messages=ask("raw"), stream=True)
        return text, _dicts([item async for item in raw])

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent() == live


def test_summary_of_a_tool_stream_keeps_the_stop_reason(claude, trace_path: Path) -> None:
    with rewind.record(trace_path):
        list(claude.messages.create(model=MODEL, max_tokens=64, tools=TOOLS, messages=ask("search x"), stream=True))
    (event,) = events(trace_path)
    assert event.response["stop_reason"] == "tool_use"
    assert [b["type"] for b in event.response["content"]] == ["tool_use"]


def test_with_raw_response_stream_replays(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[Any], str]:
        raw = claude.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("rs"), stream=True)
        return _dicts(list(raw.parse())), raw.headers.get("content-type", "")

    with rewind.record(trace_path):
        live, live_type = agent()
    assert live_type.startswith("text/event-stream")
    stub.stop()
    with rewind.replay(trace_path):
        replayed, replayed_type = agent()
    assert replayed == live and replayed_type.startswith("text/event-stream")


async def test_async_raw_streams_replay(aclaude, stub: StubServer, trace_path: Path) -> None:
    async def parsed(raw: Any) -> Any:
        result = raw.parse()
        return await result if inspect.isawaitable(result) else result

    async def agent() -> tuple[list[Any], list[Any]]:
        raw = await aclaude.messages.with_raw_response.create(
            model=MODEL, max_tokens=64, messages=ask("raw"), stream=True
        )
        first = _dicts([item async for item in await parsed(raw)])
        async with aclaude.messages.with_streaming_response.create(
            model=MODEL, max_tokens=64, messages=ask("streaming"), stream=True
        ) as response:
            second = _dicts([item async for item in await response.parse()])
        return first, second

    async with rewind.record(trace_path):
        live = await agent()
    assert [part[-1]["type"] for part in live] == ["message_stop", "message_stop"]
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent() == live
