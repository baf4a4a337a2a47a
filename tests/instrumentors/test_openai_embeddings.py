"""Embeddings: the retrieval half of a RAG agent is recorded and replayed too."""

from __future__ import annotations

from pathlib import Path

import openai
from _openai_support import events

import rewind
from rewind.stub_server import StubServer

EMBED = "text-embedding-3-small"


def test_embeddings_replay_offline(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.embeddings.create(model=EMBED, input=["alpha", "beta"])
    (event,) = events(trace_path)
    assert event.name == "openai.embeddings.create"
    assert event.request == {"model": EMBED, "input": ["alpha", "beta"]}
    stub.stop()
    with rewind.replay(trace_path):
        replayed = client.embeddings.create(model=EMBED, input=["alpha", "beta"])
    assert type(replayed) is openai.types.CreateEmbeddingResponse
    assert replayed == live
    assert replayed.data[1].embedding == live.data[1].embedding


async def test_async_embeddings(aclient, stub: StubServer, trace_path: Path) -> None:
    async with rewind.record(trace_path):
        live = await aclient.embeddings.create(model=EMBED, input="gamma", dimensions=4)
    stub.stop()
    async with rewind.replay(trace_path):
        replayed = await aclient.embeddings.create(model=EMBED, input="gamma", dimensions=4)
    assert replayed == live and len(replayed.data[0].embedding) == 4


def test_embeddings_with_raw_response(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        live = client.embeddings.with_raw_response.create(model=EMBED, input="delta", encoding_format="float").parse()
    stub.stop()
    with rewind.replay(trace_path):
        raw = client.embeddings.with_raw_response.create(model=EMBED, input="delta", encoding_format="float")
    assert raw.parse() == live
