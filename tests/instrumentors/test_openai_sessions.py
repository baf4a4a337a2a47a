"""Instrumented openai calls under every session feature: fork, redact, normalize, concurrency."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _openai_support import MODEL, ask, events

import rewind
from rewind.stub_server import StubServer


def _scrub(payload: Any) -> Any:
    """Redact every 'Echo' the model said, wherever it sits (responses and streamed chunks)."""
    if isinstance(payload, dict):
        return {k: _scrub(v) for k, v in payload.items()}
    if isinstance(payload, list):
        return [_scrub(v) for v in payload]
    return payload.replace("Echo", "[redacted]") if isinstance(payload, str) else payload


def test_fork_serves_the_prefix_then_goes_live(client, stub: StubServer, tmp_path: Path) -> None:
    original, forked = tmp_path / "a.rewind", tmp_path / "b.rewind"
    with rewind.record(original):
        first = client.chat.completions.create(model=MODEL, messages=ask("one"))
        client.chat.completions.create(model=MODEL, messages=ask("two"))
    served_before = stub.request_count
    with rewind.fork(original, at=1, save_as=forked) as session:
        again = client.chat.completions.create(model=MODEL, messages=ask("one"))
        fresh = client.chat.completions.create(model=MODEL, messages=ask("two, changed"), stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in fresh if c.choices)
    assert again == first
    assert stub.request_count == served_before + 1  # only the step after the fork point went live
    assert text == "Echo: two, changed"
    assert [e.seq for e in session.new_events] == [1]
    assert [e.live for e in events(forked)] == [False, True]


def test_redaction_reaches_streamed_chunks_and_responses(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path, redact=_scrub):
        client.chat.completions.create(model=MODEL, messages=ask("plain"))
        list(client.chat.completions.create(model=MODEL, messages=ask("streamed"), stream=True))
    text = trace_path.read_text()
    assert "Echo" not in text and "[redacted]" in text
    stub.stop()
    # Identity is the un-redacted request, so the scrubbed trace still replays.
    with rewind.replay(trace_path):
        plain = client.chat.completions.create(model=MODEL, messages=ask("plain"))
        chunks = list(client.chat.completions.create(model=MODEL, messages=ask("streamed"), stream=True))
    assert plain.choices[0].message.content == "[redacted]: plain"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "[redacted]: streamed"


def test_normalize_drops_volatile_fields_from_identity(client, stub: StubServer, trace_path: Path) -> None:
    def normalize(request: Any) -> Any:
        request.pop("user", None)
        return request

    with rewind.record(trace_path, normalize=normalize):
        live = client.chat.completions.create(model=MODEL, messages=ask("hi"), user="session-1234")
    assert events(trace_path)[0].request["user"] == "session-1234"  # stored as sent
    stub.stop()
    with rewind.replay(trace_path, normalize=normalize):
        replayed = client.chat.completions.create(model=MODEL, messages=ask("hi"), user="session-9876")
    assert replayed == live


async def test_concurrent_tasks_replay_by_identity(aclient, stub: StubServer, trace_path: Path) -> None:
    questions = [f"question {i}" for i in range(6)]

    async def ask_all() -> list[str]:
        async def one(q: str) -> str:
            reply = await aclient.chat.completions.create(model=MODEL, messages=ask(q))
            return reply.choices[0].message.content

        return list(await asyncio.gather(*(one(q) for q in questions)))

    async with rewind.record(trace_path):
        live = await ask_all()
    stub.stop()
    async with rewind.replay(trace_path, match="parallel"):
        replayed = await ask_all()
    assert replayed == live == [f"Echo: {q}" for q in questions]


def test_trace_lines_are_plain_json_with_the_request_last(client, stub: StubServer, trace_path: Path) -> None:
    with rewind.record(trace_path):
        list(client.chat.completions.create(model=MODEL, messages=ask("layout"), stream=True))
    line = json.loads(trace_path.read_text().splitlines()[1])
    assert list(line)[:8] == ["seq", "kind", "name", "fingerprint", "ts", "duration_ms", "ok", "live"]
    assert list(line)[-1] == "request"
    assert line["stream"]["truncated"] is False
