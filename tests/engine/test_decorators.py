from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.storage.trace import Trace

live_calls: list[str] = []


@rewind.llm
def call_model(**request: Any) -> dict[str, Any]:
    live_calls.append("llm")
    return {"choices": [{"message": {"content": f"answer to {request['messages'][-1]['content']}"}}]}


@rewind.tool(name="search")
def web_search(query: str, limit: int = 3) -> list[str]:
    live_calls.append("tool")
    return [f"{query}-{i}" for i in range(limit)]


@rewind.memory
async def recall(topic: str) -> list[str]:
    live_calls.append("memory")
    await asyncio.sleep(0)
    return [f"note about {topic}"]


@rewind.tool
async def failing_tool(x: int) -> int:
    live_calls.append("failing")
    raise KeyError(f"no such key {x}")


class Agent:
    @rewind.tool
    def act(self, action: str) -> str:
        live_calls.append("method")
        return action[::-1]


def agent_run() -> dict[str, Any]:
    answer = call_model(model="m-1", messages=[{"role": "user", "content": "hi"}])
    hits = web_search("flights", limit=2)
    notes = asyncio.run(recall("paris"))
    acted = Agent().act("go")
    try:
        asyncio.run(failing_tool(7))
        error = None
    except KeyError as exc:
        error = str(exc)
    return {"answer": answer, "hits": hits, "notes": notes, "acted": acted, "error": error}


def test_each_call_is_one_event_with_every_field(trace_path: Path) -> None:
    live_calls.clear()
    with rewind.record(trace_path):
        agent_run()
    trace = Trace.load(trace_path)
    assert [(e.seq, e.kind, e.name) for e in trace] == [
        (0, "llm", "call_model"),
        (1, "tool", "search"),
        (2, "memory", "recall"),
        (3, "tool", "Agent.act"),
        (4, "tool", "failing_tool"),
    ]
    assert trace[0].request == {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}
    assert trace[1].request == {"query": "flights", "limit": 2}
    assert trace[3].request == {"action": "go"}  # self is not part of the identity
    assert trace[4].error["type"] == "builtins.KeyError" and trace[4].response is None
    assert all(e.duration_ms >= 0 and e.ts > 0 and len(e.fingerprint) == 64 for e in trace)


def test_replay_serves_every_call_without_running_it(trace_path: Path) -> None:
    live_calls.clear()
    with rewind.record(trace_path):
        recorded = agent_run()
    live_calls.clear()
    with rewind.replay(trace_path) as session:
        replayed = agent_run()
    assert live_calls == []
    assert replayed == recorded
    assert session.cursor == 5 and session.mode == "replay" and session.new_events == []


def test_positional_and_keyword_calls_share_an_identity(trace_path: Path) -> None:
    with rewind.record(trace_path):
        web_search("x", 1)
    with rewind.replay(trace_path):
        assert web_search(query="x", limit=1) == ["x-0"]


def test_decorators_pass_through_without_a_session() -> None:
    live_calls.clear()
    assert web_search("q", limit=1) == ["q-0"]
    assert live_calls == ["tool"]
    assert rewind.current_session() is None


def test_decorated_function_keeps_its_metadata() -> None:
    assert web_search.__name__ == "web_search"
    assert asyncio.iscoroutinefunction(recall)


def test_a_string_argument_to_the_bare_decorator_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"name='x'"):
        rewind.tool("x")


def test_replayed_error_is_catchable_as_the_original_class(trace_path: Path) -> None:
    with rewind.record(trace_path), pytest.raises(KeyError):
        asyncio.run(failing_tool(1))
    live_calls.clear()
    with rewind.replay(trace_path), pytest.raises(KeyError) as info:
        asyncio.run(failing_tool(1))
    assert isinstance(info.value, rewind.ReplayedError)
    assert info.value.step == 0 and info.value.original_type == "builtins.KeyError"
    assert live_calls == []


def test_requests_are_stored_in_canonical_form_as_they_were_at_call_time(trace_path: Path) -> None:
    @rewind.llm(name="chat")
    def chat(model: str, messages: list[dict[str, Any]]) -> str:
        messages.append({"role": "assistant", "content": "appended during the call"})
        return "ok"

    @rewind.tool(name="tags")
    def tags(values: set[str]) -> list[str]:
        values.add("added during the call")
        return sorted(values)

    history = [{"role": "user", "content": "hi"}]
    with rewind.record(trace_path):
        chat("m", history)
        tags({"b", "a"})
    lines = trace_path.read_text().splitlines()
    assert lines[1].endswith('"request":{"messages":[{"content":"hi","role":"user"}],"model":"m"}}')
    trace = Trace.load(trace_path)
    assert trace[0].request == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert trace[1].request == {"values": ["a", "b"]}
    with rewind.replay(trace_path):  # the identity is the call-time request, not the mutated one
        assert chat("m", [{"role": "user", "content": "hi"}]) == "ok"
        assert tags({"a", "b"}) == ["a", "added during the call", "b"]
