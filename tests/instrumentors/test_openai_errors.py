"""Unhappy paths: provider errors replay catchable with a bounded e.response; revival and patch gaps."""

from __future__ import annotations

import warnings
from pathlib import Path

import openai
import pytest
from _openai_support import MODEL, ask, events
from rewind.instrumentors import _surface
from rewind.instrumentors._surface import Patcher, Surface
from rewind.instrumentors.openai import PROVIDER, OpenAIProvider

import rewind
from rewind.errors import PatchGapWarning, ReviveFallbackWarning
from rewind.stub_server import StubServer


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget which once-per-process warnings were already emitted."""
    monkeypatch.setattr(_surface, "_WARNED", set())


def test_rate_limit_replays_as_catchable_error_with_response_shim(client, stub: StubServer, trace_path: Path) -> None:
    stub.fail_next(429, headers={"retry-after": "7"})
    with rewind.record(trace_path), pytest.raises(openai.RateLimitError) as live:
        client.chat.completions.create(model=MODEL, messages=ask("too fast"))
    (event,) = events(trace_path)
    assert not event.ok and event.error["response"]["headers"]["retry-after"] == "7"
    stub.stop()

    with rewind.replay(trace_path), pytest.raises(openai.RateLimitError) as replayed:
        client.chat.completions.create(model=MODEL, messages=ask("too fast"))
    error = replayed.value
    assert isinstance(error, rewind.ReplayedError) and error.step == 0
    assert error.status_code == 429 == live.value.status_code
    assert error.request_id == live.value.request_id
    assert error.code == live.value.code and error.type == live.value.type and error.param == live.value.param
    assert error.body == live.value.body
    assert error.response.status_code == 429
    assert error.response.headers["Retry-After"] == "7"  # case-insensitive, like the live headers
    assert error.response.json() == live.value.response.json()
    assert error.response.text == live.value.response.text
    # A real HTTP response bound to a real request, as live: handlers reading them run unchanged.
    assert type(error.response) is type(live.value.response)
    assert error.response.request.method == live.value.request.method == "POST"
    assert str(error.response.request.url) == str(live.value.response.request.url)
    assert error.request is error.response.request
    assert "authorization" not in error.request.headers


def test_agent_retry_logic_reproduces(client, stub: StubServer, trace_path: Path) -> None:
    def agent() -> tuple[str, list[str]]:
        waits = []
        for _ in range(3):
            try:
                return client.chat.completions.create(model=MODEL, messages=ask("retry")).id, waits
            except openai.RateLimitError as error:
                waits.append(error.response.headers.get("retry-after"))
        raise AssertionError("never succeeded")

    stub.fail_next(429, n=2, headers={"retry-after": "1"})
    with rewind.record(trace_path):
        live = agent()
    stub.stop()
    with rewind.replay(trace_path):
        assert agent() == live == (live[0], ["1", "1"])


def test_server_error_and_async(client, stub: StubServer, trace_path: Path) -> None:
    stub.fail_next(500)
    with rewind.record(trace_path), pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="text-embedding-3-small", input="x")
    stub.stop()
    with rewind.replay(trace_path), pytest.raises(openai.InternalServerError) as replayed:
        client.embeddings.create(model="text-embedding-3-small", input="x")
    assert replayed.value.status_code == 500


async def test_async_status_error(aclient, stub: StubServer, trace_path: Path) -> None:
    stub.fail_next(400, body={"error": {"message": "bad model", "type": "invalid_request_error", "param": "model",
                                        "code": "model_not_found"}})
    async with rewind.record(trace_path):
        with pytest.raises(openai.BadRequestError):
            await aclient.chat.completions.create(model="nope", messages=ask("x"))
    stub.stop()
    async with rewind.replay(trace_path):
        with pytest.raises(openai.BadRequestError) as replayed:
            await aclient.chat.completions.create(model="nope", messages=ask("x"))
    assert replayed.value.code == "model_not_found" and replayed.value.param == "model"


def test_connection_error_replays(client, stub: StubServer, trace_path: Path) -> None:
    stub.stop()
    with rewind.record(trace_path), pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model=MODEL, messages=ask("offline"))
    with rewind.replay(trace_path), pytest.raises(openai.APIConnectionError) as replayed:
        client.chat.completions.create(model=MODEL, messages=ask("offline"))
    assert isinstance(replayed.value, rewind.ReplayedError)


def test_revival_failure_serves_the_dict_and_warns_once(
    client, stub: StubServer, trace_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_warnings: None
) -> None:
    with rewind.record(trace_path):
        live = client.chat.completions.create(model=MODEL, messages=ask("one"))
        client.chat.completions.create(model=MODEL, messages=ask("two"))
    stub.stop()

    def broken(**_: object) -> object:
        raise RuntimeError("internals moved")

    monkeypatch.setattr(PROVIDER.kit, "validate_type", broken)
    monkeypatch.setattr(PROVIDER.kit, "construct_type", broken)
    with rewind.replay(trace_path):
        with pytest.warns(ReviveFallbackWarning, match="ChatCompletion"):
            first = client.chat.completions.create(model=MODEL, messages=ask("one"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            second = client.chat.completions.create(model=MODEL, messages=ask("two"))  # no second warning
    assert first == events(trace_path)[0].response
    assert first["id"] == live.id and isinstance(second, dict)


def test_missing_required_surface_warns_once_and_predating_features_are_silent(fresh_warnings: None) -> None:
    class Moved(OpenAIProvider):
        def surfaces(self) -> list[Surface]:
            base = {"operation": "chat", "path": "/x", "result": "openai.types.chat:ChatCompletion", "provider": self}
            return [
                Surface("openai.resources.chat.completions:NoSuchCompletions", "create", "moved", **base),
                Surface("openai.resources.chat.completions:Completions", "no_such_method", "optional",
                        required=False, **base),
                Surface("openai.resources.not_invented_yet:Thing", "create", "future", **base),
            ]

    patcher = Patcher(Moved())
    with pytest.warns(PatchGapWarning, match="NoSuchCompletions") as caught:
        gaps = patcher.apply()
    assert [g.name for g in gaps] == ["moved"]
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Patcher(Moved()).apply()  # once per gap
    patcher.revert()


def test_unpatch_restores_the_original_methods(stub: StubServer) -> None:
    from openai.resources.chat.completions import AsyncCompletions, Completions

    before = (Completions.__dict__["create"], AsyncCompletions.__dict__["create"])
    from rewind.setup.integrations import patch_openai

    unpatch = patch_openai()
    assert Completions.__dict__["create"] is not before[0]
    unpatch()
    assert (Completions.__dict__["create"], AsyncCompletions.__dict__["create"]) == before


def test_payload_the_strict_parser_rejects_is_revived_leniently(client, stub: StubServer, trace_path: Path) -> None:
    """A newer API value (unknown to the installed SDK's types) replays like the SDK's lenient parse."""
    with rewind.record(trace_path):
        client.chat.completions.create(model=MODEL, messages=ask("future"))
    text = trace_path.read_text()
    trace_path.write_text(text.replace('"finish_reason":"stop"', '"finish_reason":"brand_new_reason"', 1))
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.chat.completions.create(model=MODEL, messages=ask("future"))
    assert type(replayed) is openai.types.chat.ChatCompletion
    assert replayed.choices[0].finish_reason == "brand_new_reason"


def test_missing_lenient_parser_is_reported(monkeypatch: pytest.MonkeyPatch, fresh_warnings: None) -> None:
    monkeypatch.setattr(PROVIDER.kit, "construct_type", None)
    patcher = Patcher(PROVIDER)
    try:
        with pytest.warns(PatchGapWarning, match="construct_type"):
            patcher.apply()
    finally:
        patcher.revert()
