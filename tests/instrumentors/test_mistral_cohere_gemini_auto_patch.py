"""``auto_patch()`` with every provider SDK installed: each Mistral, Cohere and Gemini call is ONE step.

Every other instrumentor (openai, anthropic, litellm, groq, bedrock …) is active at the
same time, and the three are also patched on their own on top: no call may be recorded
twice, and the recording must replay offline through the same patches.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import cohere
import pytest
from google import genai

import rewind
from rewind.stub_server import StubServer

try:
    from mistralai.client import Mistral
except ImportError:  # mistralai 1.x
    from mistralai import Mistral  # type: ignore[attr-defined,no-redef,unused-ignore]

KEY = "auto-patch-SECRET-key"


def _agent(stub: StubServer) -> list[Any]:
    mistral = Mistral(api_key=KEY, server_url=stub.mistral_base_url)
    co = cohere.ClientV2(api_key=KEY, base_url=stub.cohere_base_url)
    gemini = genai.Client(api_key=KEY, http_options={"base_url": stub.gemini_base_url})
    ask = [{"role": "user", "content": "hi"}]
    return [
        mistral.chat.complete(model="mistral-small-latest", messages=ask),
        list(mistral.chat.stream(model="mistral-small-latest", messages=ask)),
        mistral.embeddings.create(model="mistral-embed", inputs=["hi"]),
        co.chat(model="command-a-03-2025", messages=ask),
        list(co.chat_stream(model="command-a-03-2025", messages=ask)),
        co.embed(model="embed-v4.0", texts=["hi"], input_type="search_query", embedding_types=["float"]),
        co.rerank(model="rerank-v3.5", query="hi", documents=["a", "b"]),
        gemini.models.generate_content(model="gemini-2.5-flash", contents="hi"),
        list(gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="hi")),
        gemini.models.embed_content(model="text-embedding-004", contents="hi"),
    ]


EXPECTED = [
    "mistral.chat.complete",
    "mistral.chat.stream",
    "mistral.embeddings.create",
    "cohere.v2.chat",
    "cohere.v2.chat_stream",
    "cohere.v2.embed",
    "cohere.v2.rerank",
    "gemini.models.generate_content",
    "gemini.models.generate_content_stream",
    "gemini.models.embed_content",
]


def test_auto_patch_with_every_provider_records_each_call_once(stub: StubServer, trace_path: Path) -> None:
    unpatch_all = rewind.auto_patch()
    # Patched again on their own (reference-counted): still one hook per method.
    extra = [rewind.patch_mistral(), rewind.patch_cohere(), rewind.patch_gemini(), rewind.auto_patch()]
    try:
        with rewind.record(trace_path):
            live = _agent(stub)
        recorded = list(rewind.Trace.load(trace_path).events)
        assert [e.name for e in recorded] == EXPECTED
        assert len(stub.requests) == len(EXPECTED)  # and each went to the wire once
        stub.stop()
        with rewind.replay(trace_path):
            assert _agent(stub) == live
    finally:
        for undo in reversed(extra):
            undo()
        unpatch_all()
    assert KEY not in trace_path.read_text()


@pytest.mark.parametrize("name", ["mistral", "cohere", "gemini"])
def test_entry_points_name_the_instrumentors(name: str) -> None:
    (entry,) = [
        e for e in importlib.metadata.entry_points(group="opentelemetry_instrumentor") if e.name == f"rewind_{name}"
    ]
    instrumentor = entry.load()()
    instrumentor.instrument()
    try:
        assert instrumentor.is_instrumented_by_opentelemetry
    finally:
        instrumentor.uninstrument()
