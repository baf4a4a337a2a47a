"""Replay is indistinguishable from live on real provider bytes.

Each interaction of the corpus (``tests/fixtures/real_traffic``, responses recorded against
the real APIs by other projects) is served on loopback to the real SDK while rewind
records; then the server stops, rewind replays the same call, and everything the agent
could see of the outcome (``_observe``) must be the same, live and replayed. The call is
made in one of six ways, in turn: plain, ``with_raw_response`` and
``with_streaming_response``, each sync and async, so every way of reading a response meets
real bytes.
A streamed interaction is also read through the SDK's stream helpers (``_helpers``), sync
and async: the events they yield, their snapshots and their final objects must match too.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import _gemini
import _helpers
import pytest
from _observe import aobserve, differences, observe, observe_error
from _player import ENDPOINTS, Interaction, Player, interactions

import rewind

CORPUS = list(interactions())
#: Each streamed interaction an SDK's stream helper reads, with the helper's path, sync and async.
HELPER_CASES = [
    (interaction, path, is_async)
    for interaction in CORPUS
    if interaction.streamed and interaction.status < 400
    for path in _helpers.helpers(interaction.sdk, interaction.endpoint)
    for is_async in (False, True)
]
MODES = ("sync", "async", "raw", "streaming", "async_raw", "sync_streaming")
API_KEY = "sk-real-traffic-SECRET"


def _client(interaction: Interaction, base_url: str, *, is_async: bool) -> Any:
    sdk = pytest.importorskip(interaction.sdk)
    if interaction.sdk == "openai":
        # openai-compatible hosts differ in the path prefix before the endpoint.
        prefix = interaction.path[: -len(interaction.endpoint)]
        cls = sdk.AsyncOpenAI if is_async else sdk.OpenAI
        return cls(base_url=base_url + prefix, api_key=API_KEY, max_retries=0)
    cls = {"groq": ("AsyncGroq", "Groq"), "anthropic": ("AsyncAnthropic", "Anthropic")}[interaction.sdk]
    return getattr(sdk, cls[0] if is_async else cls[1])(base_url=base_url, api_key=API_KEY, max_retries=0)


def _resource(client: Any, interaction: Interaction) -> Any:
    endpoint = interaction.endpoint
    if endpoint == "/chat/completions":
        return client.chat.completions
    return getattr(client, endpoint.strip("/"))


def _arguments(create: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
    """The recorded body as keyword arguments: what the method does not name goes in ``extra_body``."""
    accepted = inspect.signature(create).parameters
    kwargs = {k: v for k, v in body.items() if k in accepted}
    extra = {k: v for k, v in body.items() if k not in accepted}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _native(interaction: Interaction, base_url: str, is_async: bool) -> Any:
    """Mistral's and Cohere's SDKs (no raw-response wrappers): the plain call, sync or async."""
    body = dict(interaction.request)
    stream = bool(body.pop("stream", False))
    if interaction.sdk == "mistral":
        try:
            from mistralai.client import Mistral
        except ImportError:  # mistralai 1.x
            from mistralai import Mistral  # type: ignore[attr-defined,no-redef,unused-ignore]
        owner: Any = Mistral(api_key=API_KEY, server_url=base_url).chat
        name = ("stream" if stream else "complete") + ("_async" if is_async else "")
    else:
        cohere = pytest.importorskip("cohere")
        owner = (cohere.AsyncClientV2 if is_async else cohere.ClientV2)(api_key=API_KEY, base_url=base_url)
        name = "chat_stream" if stream else "chat"
    method = getattr(owner, name)
    # The class's own signature (cohere's bound methods show ``*args, **kwargs``).
    accepted = inspect.signature(getattr(type(owner), name)).parameters
    kwargs = {k: v for k, v in body.items() if k in accepted}  # these SDKs take no extra_body
    try:
        if not is_async:
            return observe(method(**kwargs))

        async def call() -> Any:
            result = method(**kwargs)
            return await aobserve(await result if inspect.isawaitable(result) else result)

        return asyncio.run(call())
    except Exception as exc:
        return observe_error(exc)


def _bedrock(interaction: Interaction, base_url: str) -> Any:
    """boto3's ``converse`` / ``converse_stream`` (botocore has no async client)."""
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIAREALTRAFFIC",
        aws_secret_access_key="real-traffic-SECRET",
        config=Config(retries={"total_max_attempts": 1}),
    )
    model = unquote(interaction.path.split("/model/", 1)[1].rsplit("/", 1)[0])
    try:
        if interaction.endpoint == "/converse":
            return client.converse(modelId=model, **interaction.request)
        response = client.converse_stream(modelId=model, **interaction.request)
        return {**response, "stream": list(response["stream"])}
    except Exception as exc:
        return {"class": type(exc).__name__, "str": str(exc), "response": getattr(exc, "response", None)}


def _run(interaction: Interaction, base_url: str, mode: str) -> Any:
    """Make the recorded call through the SDK and observe everything its outcome shows."""
    if interaction.sdk == "bedrock":
        return _bedrock(interaction, base_url)
    if interaction.sdk == "gemini":
        pytest.importorskip("google.genai")
        return _gemini.run(interaction, base_url, is_async=mode in ("async", "streaming", "async_raw"))
    if interaction.sdk in ("mistral", "cohere"):
        return _native(interaction, base_url, is_async=mode in ("async", "streaming", "async_raw"))
    client = _client(interaction, base_url, is_async=mode in ("async", "streaming", "async_raw"))
    resource = _resource(client, interaction)
    kwargs = _arguments(resource.create, interaction.request)
    try:
        if mode == "sync":
            return observe(resource.create(**kwargs))
        if mode == "raw":
            return observe(resource.with_raw_response.create(**kwargs))
        if mode == "sync_streaming":
            with resource.with_streaming_response.create(**kwargs) as response:
                return observe(response)
        if mode in ("async", "async_raw"):
            create = resource.with_raw_response.create if mode == "async_raw" else resource.create

            async def plain() -> Any:
                return await aobserve(await create(**kwargs))

            return asyncio.run(plain())

        async def streaming() -> Any:
            async with resource.with_streaming_response.create(**kwargs) as response:
                return await aobserve(response)

        return asyncio.run(streaming())
    except Exception as exc:
        return observe_error(exc)


@pytest.fixture(scope="module", autouse=True)
def patched() -> Any:
    from rewind.setup.integrations import patched

    with patched("openai", "anthropic", "groq", "mistral", "cohere", "bedrock", "gemini"):
        yield


def test_the_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 150
    assert {i.sdk for i in CORPUS} == {"openai", "anthropic", "groq", "mistral", "cohere", "bedrock", "gemini"}
    assert {i.endpoint for i in CORPUS} == set(ENDPOINTS)
    assert any(i.streamed for i in CORPUS) and any(i.status >= 400 for i in CORPUS)
    # OpenAI-compatible servers' extensions, which the SDK exposes live as extra fields:
    # reasoning text (DeepSeek, OpenRouter), vendor usage and timing (OpenRouter, Cerebras).
    bodies = b"".join(i.body for i in CORPUS if i.host != "api.openai.com")
    for field in (b'"reasoning_content"', b'"reasoning_details"', b'"cost"', b'"time_info"'):
        assert field in bodies, field


@pytest.mark.parametrize(
    ("interaction", "mode"),
    [(i, MODES[n % len(MODES)]) for n, i in enumerate(CORPUS)],
    ids=[f"{i.id}-{MODES[n % len(MODES)]}" for n, i in enumerate(CORPUS)],
)
def test_replay_matches_live(interaction: Interaction, mode: str, tmp_path: Path) -> None:
    trace = tmp_path / "run.rewind"
    with Player(interaction) as player:
        with rewind.record(trace):
            live = _run(interaction, player.base_url, mode)
        base_url = player.base_url
    assert player.requests, "the SDK never reached the player"
    with rewind.replay(trace, require_full_consumption=True):
        replayed = _run(interaction, base_url, mode)
    diffs = differences(live, replayed)
    assert not diffs, "replay differs from live:\n" + "\n".join(diffs[:20])


def test_every_stream_helper_meets_real_streams() -> None:
    paths = {path for _, path, _ in HELPER_CASES}
    assert {"chat.completions", "responses", "messages", "beta.messages"} <= paths
    assert len(HELPER_CASES) >= 100


@pytest.mark.parametrize(
    ("interaction", "path", "is_async"),
    HELPER_CASES,
    ids=[f"{i.id}-{path}-{'async' if is_async else 'sync'}" for i, path, is_async in HELPER_CASES],
)
def test_stream_helpers_replay_as_live(interaction: Interaction, path: str, is_async: bool, tmp_path: Path) -> None:
    """The helper's events, snapshots and final objects, live against the player and replayed."""

    def read(base_url: str) -> dict[str, Any]:
        client = _client(interaction, base_url, is_async=is_async)
        return _helpers.run(client, interaction, path, is_async=is_async)

    trace = tmp_path / "run.rewind"
    with Player(interaction) as player:
        with rewind.record(trace):
            live = read(player.base_url)
        base_url = player.base_url
    assert player.requests, "the SDK never reached the player"
    assert live["events"], "the helper yielded no event"
    with rewind.replay(trace, require_full_consumption=True):
        replayed = read(base_url)
    diffs = differences(live, replayed)
    assert not diffs, "replay differs from live:\n" + "\n".join(diffs[:20])
