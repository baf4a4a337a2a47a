"""Fields the SDK does not model replay as the SDK exposes them live.

Azure OpenAI adds ``prompt_filter_results`` and ``content_filter_results`` (its documented
content-filter annotations) to chat completions and their chunks; Groq adds ``channel`` to a
streamed delta. The ``openai`` and ``groq`` SDKs keep such fields as extras, outside
``model_fields_set``: a replay must too. Azure errors also check the replayed ``e.request``:
the deployment path and ``api-version`` query Azure's request builder makes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _observe import differences, observe, observe_error
from _player import Interaction, Player

import rewind

openai = pytest.importorskip("openai")

CATEGORIES = ("hate", "self_harm", "sexual", "violence")
FILTERS = {category: {"filtered": False, "severity": "safe"} for category in CATEGORIES}
COMPLETION = {
    "id": "chatcmpl-azure-1",
    "object": "chat.completion",
    "created": 1733000000,
    "model": "gpt-4o-2024-11-20",
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": FILTERS}],
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "logprobs": None,
            "message": {"role": "assistant", "content": "Oslo.", "refusal": None},
            "content_filter_results": FILTERS,
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    "system_fingerprint": "fp_azure",
}
CHUNKS = [
    {"id": "chatcmpl-azure-2", "object": "chat.completion.chunk", "created": 1733000000, "model": "", "choices": [],
     "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": FILTERS}]},
    {"id": "chatcmpl-azure-2", "object": "chat.completion.chunk", "created": 1733000000, "model": "gpt-4o",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Oslo."}, "finish_reason": None,
                  "content_filter_results": FILTERS}]},
    {"id": "chatcmpl-azure-2", "object": "chat.completion.chunk", "created": 1733000000, "model": "gpt-4o",
     "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "content_filter_results": {}}]},
]  # fmt: skip
GROQ_CHUNKS = [
    {"id": "chatcmpl-groq-1", "object": "chat.completion.chunk", "created": 1733000000, "model": "openai/gpt-oss-20b",
     "choices": [{"index": 0, "delta": {"role": "assistant", "channel": "analysis", "reasoning": "Think."},
                  "finish_reason": None}]},
    {"id": "chatcmpl-groq-1", "object": "chat.completion.chunk", "created": 1733000000, "model": "openai/gpt-oss-20b",
     "choices": [{"index": 0, "delta": {"channel": "final", "content": "Oslo."}, "finish_reason": "stop"}],
     "x_groq": {"id": "req_01", "usage": {"queue_time": 0.01, "prompt_tokens": 9, "completion_tokens": 3}}},
]  # fmt: skip
ASK = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Capital of Norway?"}]}


def _sse(chunks: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _interaction(status: int, body: Any, *, streamed: bool = False) -> Interaction:
    content_type = "text/event-stream; charset=utf-8" if streamed else "application/json"
    return Interaction(
        source="synthetic",
        index=0,
        host="example.openai.azure.com",
        path="/openai/deployments/gpt-4o/chat/completions",
        request=ASK,
        status=status,
        headers=(("content-type", content_type), ("apim-request-id", "apim-1"), ("x-request-id", "req-azure")),
        body=body if isinstance(body, bytes) else json.dumps(body).encode(),
    )


def _azure(base_url: str) -> Any:
    return openai.AzureOpenAI(azure_endpoint=base_url, api_key="azure-SECRET", api_version="2024-10-21", max_retries=0)


def _record_then_replay(interaction: Interaction, call: Any, tmp_path: Path) -> tuple[Any, Any]:
    trace = tmp_path / "run.rewind"
    with Player(interaction) as player, rewind.record(trace):
        live = call(player.base_url)
    with rewind.replay(trace, require_full_consumption=True):
        replayed = call(player.base_url)
    return live, replayed


@pytest.fixture(autouse=True)
def patched() -> Any:
    from rewind.setup.integrations import patched

    with patched("openai", "groq"):
        yield


@pytest.mark.parametrize("raw", [False, True], ids=["parsed", "raw"])
def test_azure_content_filter_results(raw: bool, tmp_path: Path) -> None:
    def call(base_url: str) -> Any:
        completions = _azure(base_url).chat.completions
        return observe((completions.with_raw_response if raw else completions).create(**ASK))

    live, replayed = _record_then_replay(_interaction(200, COMPLETION), call, tmp_path)
    choice = live["parsed"]["fields_set"]["choices"][0] if raw else live["fields_set"]["choices"][0]
    assert "content_filter_results" not in choice["_set"]  # an extra, live
    assert differences(live, replayed) == []


def test_azure_streamed_content_filter_results(tmp_path: Path) -> None:
    def call(base_url: str) -> Any:
        return observe(_azure(base_url).chat.completions.create(**ASK, stream=True))

    live, replayed = _record_then_replay(_interaction(200, _sse(CHUNKS), streamed=True), call, tmp_path)
    assert len(live["chunks"]) == 3
    assert differences(live, replayed) == []


def test_azure_error_request_is_the_deployment_url(tmp_path: Path) -> None:
    error = {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation have exceeded"}}

    def call(base_url: str) -> Any:
        try:
            _azure(base_url).chat.completions.create(**ASK)
        except openai.RateLimitError as exc:
            return observe_error(exc)
        raise AssertionError("no error")

    live, replayed = _record_then_replay(_interaction(429, error), call, tmp_path)
    assert live["request"]["url"].endswith("/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21")
    assert differences(live, replayed) == []


def test_groq_delta_channel(tmp_path: Path) -> None:
    groq = pytest.importorskip("groq")

    def call(base_url: str) -> Any:
        client = groq.Groq(base_url=base_url, api_key="gsk-SECRET", max_retries=0)
        return observe(client.chat.completions.create(**ASK, stream=True))

    interaction = _interaction(200, _sse(GROQ_CHUNKS), streamed=True)
    live, replayed = _record_then_replay(interaction, call, tmp_path)
    assert "channel" not in live["chunks"][0]["fields_set"]["choices"][0]["delta"]["_set"]
    assert differences(live, replayed) == []
