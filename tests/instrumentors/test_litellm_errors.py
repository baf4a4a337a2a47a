"""litellm errors replay as litellm's own exception classes, with status codes and headers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai
import pytest
from _litellm_support import (  # noqa: F401 - patched_litellm is a fixture
    API_KEY,
    EMBEDDING_MODEL,
    MODEL,
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


@pytest.mark.parametrize(
    ("status", "error_classes"),
    [
        (429, {"RateLimitError"}),
        (401, {"AuthenticationError"}),
        (400, {"BadRequestError"}),
        (500, {"InternalServerError", "APIError"}),  # litellm's mapping of a 500 moved over releases
    ],
)
def test_provider_errors_replay_as_litellm_exceptions(
    stub: StubServer, trace_path: Path, status: int, error_classes: set[str]
) -> None:
    stub.fail_next(status, headers={"retry-after": "7"})
    with rewind.record(trace_path), pytest.raises(openai.APIError) as live:
        litellm.completion(model=MODEL, messages=ask("fail"), **openai_route(stub))
    assert type(live.value).__name__ in error_classes
    assert type(live.value).__module__ == "litellm.exceptions"
    (event,) = events(trace_path)
    assert not event.ok and API_KEY not in trace_path.read_text()
    stub.stop()

    with rewind.replay(trace_path), pytest.raises(type(live.value)) as replayed:
        litellm.completion(model=MODEL, messages=ask("fail"), **openai_route(stub))
    error = replayed.value
    assert isinstance(error, rewind.ReplayedError) and error.step == 0
    assert type(error).__name__ == type(live.value).__name__
    assert error.status_code == live.value.status_code == status
    assert str(error) == str(live.value)
    assert error.llm_provider == live.value.llm_provider == "openai" and error.model == live.value.model
    live_response = getattr(live.value, "response", None)  # litellm 1.60's APIError has none
    if live_response is not None:
        assert error.response.status_code == live_response.status_code
        assert dict(error.response.headers) == dict(live_response.headers)
        # A real httpx response bound to the request litellm sent (frameworks and handlers
        # read e.response.request, e.request), its URL rebuilt from the replaying call's
        # api_base: the trace keeps only the path.
        live_request = live_response.request
        assert type(error.response) is type(live_response) and error.response.text == live_response.text
        assert (error.response.request.method, str(error.response.request.url)) == (
            live_request.method,
            str(live_request.url),
        )
        assert (error.request.method, str(error.request.url)) == (
            live.value.request.method,
            str(live.value.request.url),
        )
        assert stub.openai_base_url not in trace_path.read_text()
    assert error.litellm_response_headers["Retry-After"] == live.value.litellm_response_headers["retry-after"] == "7"


def test_async_and_embedding_errors(stub: StubServer, trace_path: Path) -> None:
    async def agent() -> list[str]:
        caught = []
        try:
            await litellm.acompletion(model=MODEL, messages=ask("a"), **openai_route(stub))
        except litellm.exceptions.RateLimitError as exc:
            caught.append(type(exc).__name__)
        stub.fail_next(400)  # litellm's embeddings retry a 429 whatever max_retries says
        try:
            await litellm.aembedding(model=EMBEDDING_MODEL, input="e", **openai_route(stub))
        except litellm.exceptions.BadRequestError as exc:
            caught.append(type(exc).__name__)
        return caught

    async def record() -> list[str]:
        async with rewind.record(trace_path):
            return await agent()

    async def replay() -> list[str]:
        async with rewind.replay(trace_path):
            return await agent()

    stub.fail_next(429)
    assert asyncio.run(record()) == ["RateLimitError", "BadRequestError"]
    assert [e.name for e in events(trace_path)] == ["litellm.completion", "litellm.embedding"]
    stub.stop()
    assert asyncio.run(replay()) == ["RateLimitError", "BadRequestError"]


def test_litellms_own_retries_are_inside_the_one_step(stub: StubServer, trace_path: Path) -> None:
    stub.fail_next(429)  # the first attempt fails, litellm's retry succeeds
    route = {**openai_route(stub), "num_retries": 1}
    with rewind.record(trace_path):
        live = litellm.completion(model=MODEL, messages=ask("retry"), **route)
    assert stub.request_count == 2
    assert [e.ok for e in events(trace_path)] == [True]
    stub.stop()
    with rewind.replay(trace_path):
        assert same(litellm.completion(model=MODEL, messages=ask("retry"), **route), live)


def test_an_error_quoting_the_key_never_writes_it(stub: StubServer, trace_path: Path) -> None:
    # Some providers echo the key they rejected; litellm puts their message in its own.
    stub.fail_next(401, body={"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "auth"}})
    stub.add_script({"text": "one two three", "stream_error_after": 1, "error": {"status": 500, "message": API_KEY}})
    with rewind.record(trace_path):
        with pytest.raises(litellm.exceptions.AuthenticationError) as live:
            litellm.completion(model=MODEL, messages=ask("who am i"), **openai_route(stub))
        assert API_KEY in str(live.value)  # the agent sees what litellm raised, unchanged
        with pytest.raises(openai.OpenAIError) as mid_stream:
            for _ in litellm.completion(model=MODEL, messages=ask("stream"), stream=True, **openai_route(stub)):
                pass
        assert API_KEY in str(mid_stream.value)
    assert [e.ok for e in events(trace_path)] == [False, False]
    assert API_KEY not in trace_path.read_text()
