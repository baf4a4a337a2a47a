"""Anthropic on Bedrock and on Vertex: their beta ``Messages`` are classes of their own.

A real Anthropic response from the corpus is served on loopback to ``AnthropicBedrock`` /
``AnthropicVertex`` (``base_url`` pointed at the player, placeholder credentials); the call
is recorded, the player stops, and the replay must be served from the trace, identical to
live (``_request_id`` included: these responses carry no ``request-id`` header, so it is
``None`` live).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _observe import aobserve, differences, observe
from _player import Player, interactions

import rewind
from rewind.storage.trace import Trace

anthropic = pytest.importorskip("anthropic")

MESSAGE = next(i for i in interactions() if i.sdk == "anthropic" and i.status == 200 and not i.streamed)
# A platform response carries no request id: drop it from what the player sends.
PLAIN = type(MESSAGE)(**{**vars(MESSAGE), "headers": tuple(h for h in MESSAGE.headers if h[0] != "request-id")})


def _client(platform: str, base_url: str, *, is_async: bool) -> Any:
    if platform == "bedrock":
        pytest.importorskip("boto3")
        cls = anthropic.AsyncAnthropicBedrock if is_async else anthropic.AnthropicBedrock
        return cls(
            aws_access_key="AKIA-placeholder", aws_secret_key="placeholder", aws_region="us-east-1", base_url=base_url
        )
    pytest.importorskip("google.auth")
    cls = anthropic.AsyncAnthropicVertex if is_async else anthropic.AnthropicVertex
    return cls(region="us-east5", project_id="placeholder", access_token="placeholder", base_url=base_url)


def _run(platform: str, base_url: str, is_async: bool) -> Any:
    client = _client(platform, base_url, is_async=is_async)
    kwargs = {k: v for k, v in PLAIN.request.items() if k != "model"}
    kwargs["model"] = "claude-sonnet-4"
    if is_async:

        async def call() -> Any:
            return await aobserve(await client.beta.messages.create(**kwargs))

        return asyncio.run(call())
    return observe(client.beta.messages.create(**kwargs))


@pytest.fixture(autouse=True)
def patched() -> Any:
    from rewind.setup.integrations import patched

    with patched("anthropic"):
        yield


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("platform", ["bedrock", "vertex"])
def test_platform_beta_messages_record_and_replay(platform: str, is_async: bool, tmp_path: Path) -> None:
    trace = tmp_path / "run.rewind"
    with Player(PLAIN) as player, rewind.record(trace):
        live = _run(platform, player.base_url, is_async)
    assert player.requests, "the SDK never reached the player"
    (event,) = Trace.load(trace).events
    assert event.name == "anthropic.beta.messages.create"
    assert live["request_id"] is None
    with rewind.replay(trace, require_full_consumption=True):
        replayed = _run(platform, player.base_url, is_async)
    assert differences(live, replayed) == []
