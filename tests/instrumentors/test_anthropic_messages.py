"""Non-streamed Anthropic calls: messages/beta create, tool use, thinking, raw responses, parse, count_tokens."""

from __future__ import annotations

import gc
import inspect
import warnings
from pathlib import Path
from typing import Any

import anthropic
import pydantic
import pytest
from _anthropic_support import (
    API_KEY,
    MODEL,
    THINKING,
    TOOLS,
    ask,
    events,
    needs_parse,
    needs_thinking,
)

import rewind
from rewind.errors import UnconsumedEventsWarning
from rewind.stub_server import StubServer


def test_create_replays_a_real_message_offline(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("hello"), stop_sequences=["END"])
    (event,) = events(trace_path)
    assert event.kind == "llm" and event.name == "anthropic.messages.create"
    assert event.request == {"model": MODEL, "max_tokens": 64, "messages": ask("hello"), "stop_sequences": ["END"]}
    assert event.response["content"] == [{"type": "text", "text": "Echo: hello"}]
    assert event.get("request_id") == live._request_id == "req_stub_1"
    assert API_KEY not in trace_path.read_text()
    stub.stop()

    with rewind.replay(trace_path):
        replayed = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("hello"), stop_sequences=["END"])
    assert type(replayed) is anthropic.types.Message
    assert replayed.to_dict() == live.to_dict()
    assert replayed.content[0].text == "Echo: hello" and replayed.usage.output_tokens == live.usage.output_tokens
    assert replayed._request_id == live._request_id


async def test_async_create_replays_offline(aclaude, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        live = await aclaude.messages.create(model=MODEL, max_tokens=64, messages=ask("async hello"))
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await aclaude.messages.create(model=MODEL, max_tokens=64, messages=ask("async hello"))
    assert type(replayed) is anthropic.types.Message
    assert replayed.to_dict() == live.to_dict()


def _tool_turns(client) -> tuple[object, object]:
    first = client.messages.create(model=MODEL, max_tokens=256, tools=TOOLS, messages=ask('search for "otel replay"'))
    call = next(block for block in first.content if block.type == "tool_use")
    history = [
        *ask('search for "otel replay"'),
        {"role": "assistant", "content": first.content},  # SDK objects, as agents pass them back
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "2 hits"}]},
    ]
    final = client.messages.create(model=MODEL, max_tokens=256, tools=TOOLS, messages=history)
    return first, final


def test_tool_use_conversation_round_trips(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        first, final = _tool_turns(claude)
    assert first.stop_reason == "tool_use"
    tool_use = first.content[-1]
    assert isinstance(tool_use, anthropic.types.ToolUseBlock) and tool_use.input == {"query": "otel replay"}
    assert final.content[0].text == "Based on the tool result: 2 hits"
    stub.stop()

    # The second request carries revived SDK blocks; their identity must equal the live ones'.
    with rewind.replay(trace_path):
        replayed_first, replayed_final = _tool_turns(claude)
    assert isinstance(replayed_first.content[-1], anthropic.types.ToolUseBlock)
    assert replayed_first.to_dict() == first.to_dict()
    assert replayed_final.to_dict() == final.to_dict()


@needs_thinking
def test_thinking_blocks_round_trip_with_their_signature(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[object, object]:
        first = claude.messages.create(model=MODEL, max_tokens=2048, thinking=THINKING, messages=ask("think"))
        history = [*ask("think"), {"role": "assistant", "content": first.content}, *ask("again")]
        return first, claude.messages.create(model=MODEL, max_tokens=2048, thinking=THINKING, messages=history)

    with rewind.record(trace_path):
        live_first, live_second = agent()
    assert [b.type for b in live_first.content] == ["thinking", "text"]
    stub.stop()
    with rewind.replay(trace_path):
        first, second = agent()
    block = first.content[0]
    assert isinstance(block, anthropic.types.ThinkingBlock)
    assert block.signature == live_first.content[0].signature and block.thinking == live_first.content[0].thinking
    assert second.to_dict() == live_second.to_dict()


def test_with_raw_response_replays_headers_and_parse(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        raw = claude.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("raw"))
        live = raw.parse()
    (event,) = events(trace_path)
    assert event.get("http")["headers"]["request-id"] == raw.headers["request-id"]
    assert "authorization" not in event.get("http")["headers"]
    stub.stop()

    with rewind.replay(trace_path):
        replayed = claude.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("raw"))
        assert replayed.http_response.status_code == 200
        assert replayed.headers["request-id"] == raw.headers["request-id"]
        message = replayed.parse()
    assert type(message) is anthropic.types.Message
    assert message.to_dict() == live.to_dict()


async def test_async_with_raw_response_replays(aclaude, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        raw = await aclaude.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("raw"))
        live = await raw.parse() if _awaitable_parse(raw) else raw.parse()
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await aclaude.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("raw"))
        message = await replayed.parse() if _awaitable_parse(replayed) else replayed.parse()
    assert replayed.headers["request-id"] == raw.headers["request-id"]
    assert message.to_dict() == live.to_dict()


def _awaitable_parse(raw: object) -> bool:
    # LegacyAPIResponse (older SDKs) parses synchronously; AsyncAPIResponse awaits.
    import inspect

    return inspect.iscoroutinefunction(type(raw).parse)


def test_beta_create_and_raw_replay(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[object, object]:
        message = claude.beta.messages.create(model=MODEL, max_tokens=64, messages=ask("beta"), betas=["x-1"])
        raw = claude.beta.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("raw beta"))
        return message, raw.parse()

    with rewind.record(trace_path):
        live, live_raw = agent()
    assert [e.name for e in events(trace_path)] == ["anthropic.beta.messages.create"] * 2
    assert events(trace_path)[0].request["betas"] == ["x-1"]
    stub.stop()
    with rewind.replay(trace_path):
        message, parsed = agent()
    assert type(message).__name__ == "BetaMessage" and type(parsed).__name__ == "BetaMessage"
    assert message.to_dict() == live.to_dict() and parsed.to_dict() == live_raw.to_dict()


async def test_async_beta_create_replays(aclaude, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        live = await aclaude.beta.messages.create(model=MODEL, max_tokens=64, messages=ask("beta"))
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await aclaude.beta.messages.create(model=MODEL, max_tokens=64, messages=ask("beta"))
    assert type(replayed).__name__ == "BetaMessage" and replayed.to_dict() == live.to_dict()


class City(pydantic.BaseModel):
    name: str
    population: int


@needs_parse
def test_parse_replays_parsed_output_from_the_wire_shape(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = claude.messages.parse(model=MODEL, max_tokens=256, messages=ask("name=Paris"), output_format=City)
    (event,) = events(trace_path)
    assert event.name == "anthropic.messages.parse"
    assert "parsed_output" not in str(event.response)  # derived client-side, never stored
    assert event.request["output_format"]["type"] == "City"  # the class, as its JSON schema
    stub.stop()
    with rewind.replay(trace_path):
        replayed = claude.messages.parse(model=MODEL, max_tokens=256, messages=ask("name=Paris"), output_format=City)
    assert isinstance(replayed.parsed_output, City)
    assert replayed.parsed_output == live.parsed_output


@needs_parse
def test_beta_parse_and_the_stream_helper_with_output_format(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[Any, Any]:
        parsed = claude.beta.messages.parse(model=MODEL, max_tokens=256, messages=ask("name=Paris"), output_format=City)
        with claude.messages.stream(
            model=MODEL, max_tokens=256, messages=ask("name=Rome"), output_format=City
        ) as stream:
            final = stream.get_final_message()
        return parsed.parsed_output, final.parsed_output

    with rewind.record(trace_path):
        live = agent()
    assert [e.name for e in events(trace_path)] == ["anthropic.beta.messages.parse", "anthropic.messages.create"]
    stub.stop()
    with rewind.replay(trace_path):
        replayed = agent()
    assert replayed == live and all(isinstance(city, City) for city in replayed)


@needs_parse
async def test_async_parse_and_count_tokens_replay(aclaude, stub: StubServer, trace_path: Path) -> None:
    async def agent() -> tuple[Any, int]:
        parsed = await aclaude.messages.parse(
            model=MODEL, max_tokens=256, messages=ask("name=Oslo"), output_format=City
        )
        counted = await aclaude.messages.count_tokens(model=MODEL, messages=ask("a b"))
        return parsed.parsed_output, counted.input_tokens

    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent() == live
    assert isinstance(live[0], City)


def test_count_tokens_replays(claude, stub: StubServer, trace_path: Path) -> None:
    if not hasattr(claude.messages, "count_tokens"):
        pytest.skip("this anthropic SDK has no messages.count_tokens")
    with rewind.record(trace_path):
        live = claude.messages.count_tokens(model=MODEL, messages=ask("three little words"))
        live_beta = claude.beta.messages.count_tokens(model=MODEL, messages=ask("three little words"))
    stub.stop()
    with rewind.replay(trace_path):
        replayed = claude.messages.count_tokens(model=MODEL, messages=ask("three little words"))
        replayed_beta = claude.beta.messages.count_tokens(model=MODEL, messages=ask("three little words"))
    assert type(replayed) is type(live) and replayed.input_tokens == live.input_tokens > 0
    assert type(replayed_beta) is type(live_beta) and replayed_beta.input_tokens == live_beta.input_tokens


def test_no_session_passes_straight_through(claude, stub: StubServer) -> None:
    message = claude.messages.create(model=MODEL, max_tokens=64, messages=ask("plain"))
    assert message.content[0].text == "Echo: plain" and stub.request_count == 1
    with claude.messages.stream(model=MODEL, max_tokens=64, messages=ask("plain")) as stream:
        assert stream.get_final_text() == "Echo: plain"


async def test_async_no_session_passes_straight_through(aclaude, stub: StubServer) -> None:
    async with aclaude.messages.stream(model=MODEL, max_tokens=64, messages=ask("plain")) as stream:
        assert await stream.get_final_text() == "Echo: plain"
    assert stub.request_count == 1


async def test_replayed_async_helper_never_sends_the_sdk_request(aclaude, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path), aclaude.messages.stream(model=MODEL, max_tokens=64, messages=ask("a")) as s:
        await s.get_final_text()
    stub.stop()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with rewind.replay(trace_path):
            async with aclaude.messages.stream(model=MODEL, max_tokens=64, messages=ask("a")) as stream:
                assert await stream.get_final_text() == "Echo: a"
            gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_a_changed_request_diverges_instead_of_going_live(claude, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        claude.messages.create(model=MODEL, max_tokens=64, messages=ask("one"))
    stub.stop()
    with pytest.warns(UnconsumedEventsWarning), rewind.replay(trace_path), pytest.raises(rewind.DivergenceError):
        claude.messages.create(model=MODEL, max_tokens=64, messages=ask("two"))
    assert stub.request_count == 1


def _tool_runner_kwargs() -> dict[str, Any]:
    runner = getattr(anthropic.resources.beta.messages.Messages, "tool_runner", None)
    if runner is None or getattr(anthropic, "beta_tool", None) is None:
        pytest.skip("this anthropic SDK has no beta tool runner")
    # Newer SDKs default to server-held message threads; the stub (like most proxies) has none.
    return {"thread": False} if "thread" in inspect.signature(runner).parameters else {}


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_tool_runner_turns_are_recorded_and_replayed(
    claude, stub: StubServer, trace_path: Path, stream: bool
) -> None:
    extra = _tool_runner_kwargs()

    @anthropic.beta_tool
    def search(query: str) -> str:
        """Search the web."""
        return f"2 hits for {query}"

    def agent() -> list[Any]:
        runner = claude.beta.messages.tool_runner(
            model=MODEL, max_tokens=256, tools=[search], messages=ask('search "otel"'), stream=stream, **extra
        )
        if stream:
            return [s.get_final_message().content[-1].to_dict() for s in runner]
        return [message.content[-1].to_dict() for message in runner]

    with rewind.record(trace_path):
        live = agent()
    assert live[-1]["text"] == "Based on the tool result: 2 hits for otel"
    assert [e.name for e in events(trace_path)] == ["anthropic.beta.messages.create"] * 2
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live
