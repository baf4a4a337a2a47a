"""Anthropic errors replay as catchable SDK exceptions: HTTP errors, overload (529), mid-stream errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import pytest
from _anthropic_support import (
    LONG,
    MODEL,
    ask,
    events,
)

import rewind
from rewind.errors import ReplayedError
from rewind.stub_server import StubServer

#: The class the SDK raises for HTTP 529 (older SDKs define it without exporting it).
OVERLOADED = getattr(anthropic, "OverloadedError", None) or getattr(
    anthropic._exceptions, "OverloadedError", anthropic.InternalServerError
)


def _capture(call: Any) -> BaseException:
    with pytest.raises(anthropic.APIStatusError) as info:
        call()
    return info.value


def test_rate_limit_replays_catchable_with_scalars_and_response_shim(
    claude, stub: StubServer, trace_path: Path
) -> None:
    def call() -> Any:
        return claude.messages.create(model=MODEL, max_tokens=64, messages=ask("limited"))

    with rewind.record(trace_path):
        stub.fail_next(status=429, headers={"retry-after": "7"})
        live = _capture(call)
    assert isinstance(live, anthropic.RateLimitError)
    (event,) = events(trace_path)
    assert not event.ok and event.error["response"]["headers"]["retry-after"] == "7"
    stub.stop()

    with rewind.replay(trace_path), pytest.raises(anthropic.RateLimitError) as info:
        call()
    replayed = info.value
    assert isinstance(replayed, ReplayedError)
    assert replayed.status_code == 429 and replayed.request_id == live.request_id
    assert replayed.body == live.body
    assert getattr(replayed, "type", None) == getattr(live, "type", None)
    assert replayed.response.status_code == 429
    assert replayed.response.headers["Retry-After"] == "7"  # case-insensitive, like the live headers
    assert replayed.response.json() == live.response.json()
    # A real HTTP response bound to a real request, as live: handlers reading them run unchanged.
    assert type(replayed.response) is type(live.response)
    assert replayed.response.request.method == live.request.method == "POST"
    assert str(replayed.response.request.url) == str(live.response.request.url)
    assert replayed.request is replayed.response.request
    assert "authorization" not in replayed.request.headers and "x-api-key" not in replayed.request.headers


@pytest.mark.parametrize("status", [529, 500])
def test_server_errors_replay_as_their_sdk_class(claude, stub: StubServer, trace_path: Path, status: int) -> None:
    def call() -> Any:
        return claude.messages.create(model=MODEL, max_tokens=64, messages=ask("busy"))

    with rewind.record(trace_path):
        stub.fail_next(status=status)
        live = _capture(call)
    if status == 529:
        assert isinstance(live, OVERLOADED)
    stub.stop()
    with rewind.replay(trace_path):
        replayed = _capture(call)
    assert type(live) in type(replayed).__mro__ and replayed.status_code == status


async def test_async_error_replays(aclaude, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        stub.fail_next(status=429)
        with pytest.raises(anthropic.RateLimitError):
            await aclaude.messages.create(model=MODEL, max_tokens=64, messages=ask("limited"))
    stub.stop()
    async with rewind.replay(trace_path):
        with pytest.raises(anthropic.RateLimitError) as info:
            await aclaude.messages.create(model=MODEL, max_tokens=64, messages=ask("limited"))
    assert info.value.status_code == 429


def test_error_opening_a_stream_helper_replays_at_enter(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> None:
        with claude.messages.stream(model=MODEL, max_tokens=64, messages=ask("busy")) as stream:
            stream.get_final_text()

    with rewind.record(trace_path):
        stub.fail_next(status=529)
        with pytest.raises(OVERLOADED):
            agent()
    stub.stop()
    with rewind.replay(trace_path), pytest.raises(OVERLOADED):
        agent()


def test_mid_stream_overload_replays_after_the_same_events(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[list[Any], BaseException]:
        seen: list[Any] = []
        with pytest.raises(anthropic.APIStatusError) as info:
            for item in claude.messages.create(model=MODEL, max_tokens=64, messages=ask("x"), stream=True):
                seen.append(item.to_dict())
        return seen, info.value

    stub.add_script({"text": LONG, "stream_error_after": 2})
    with rewind.record(trace_path):
        live_seen, live_error = agent()
    (event,) = events(trace_path)
    assert not event.ok and event.get("stream")["chunks"] == live_seen
    assert event.response is None
    stub.stop()

    with rewind.replay(trace_path):
        seen, error = agent()
    assert seen == live_seen
    assert isinstance(error, ReplayedError) and type(live_error) in type(error).__mro__
    assert getattr(error, "type", "overloaded_error") == getattr(live_error, "type", "overloaded_error")
    assert error.body == live_error.body


def test_mid_stream_error_through_the_helper(claude, stub: StubServer, trace_path: Path) -> None:
    def agent() -> list[str]:
        words: list[str] = []
        with (
            claude.messages.stream(model=MODEL, max_tokens=64, messages=ask("x")) as stream,
            pytest.raises(anthropic.APIStatusError),
        ):
            for word in stream.text_stream:
                words.append(word)
        return words

    stub.add_script({"text": LONG, "stream_error_after": 3})
    with rewind.record(trace_path):
        live = agent()
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live == ["one", " two", " three"]


async def test_async_mid_stream_error(aclaude, stub: StubServer, trace_path: Path) -> None:
    async def agent() -> list[str]:
        words: list[str] = []
        async with aclaude.messages.stream(model=MODEL, max_tokens=64, messages=ask("x")) as stream:
            with pytest.raises(anthropic.APIStatusError):
                async for word in stream.text_stream:
                    words.append(word)
        return words

    stub.add_script({"text": LONG, "stream_error_after": 2})
    async with rewind.record(trace_path):
        live = await agent()
    stub.stop()
    async with rewind.replay(trace_path):
        assert await agent() == live == ["one", " two"]


def test_raw_response_error_replays(claude, stub: StubServer, trace_path: Path) -> None:
    def call() -> Any:
        return claude.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=ask("raw"))

    with rewind.record(trace_path):
        stub.fail_next(status=400)
        live = _capture(call)
    stub.stop()
    with rewind.replay(trace_path):
        replayed = _capture(call)
    assert isinstance(replayed, anthropic.BadRequestError) and replayed.status_code == live.status_code == 400


def test_connection_error_replays_without_a_server(claude, stub: StubServer, trace_path: Path) -> None:
    stub.stop()

    def call() -> Any:
        return claude.messages.create(model=MODEL, max_tokens=64, messages=ask("nobody home"))

    with rewind.record(trace_path), pytest.raises(anthropic.APIConnectionError):
        call()
    with rewind.replay(trace_path), pytest.raises(anthropic.APIConnectionError) as info:
        call()
    assert isinstance(info.value, ReplayedError)
