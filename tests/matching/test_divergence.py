"""A ``DivergenceError`` explains itself: step, kind and name, a readable diff, the cause, a fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.matching import IncomingCall
from rewind.matching.divergence import CONTENT, KIND, LONGER, NAME, ORDER, TOOLS, VOLATILE, classify, request_diff
from rewind.storage.trace import Event, Trace

SEARCH_TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}


@rewind.llm
def chat(**request: Any) -> dict[str, Any]:
    return {"choices": [{"message": {"content": "ok"}}]}


@rewind.tool
def search(query: str) -> str:
    return f"results for {query}"


@rewind.tool(name="lookup")
def lookup(query: str) -> str:
    return f"looked up {query}"


def _diverge(path: Path, recorded: list[Any], replayed: list[Any], **replay: Any) -> rewind.DivergenceError:
    with rewind.record(path):
        for fn, kwargs in recorded:
            fn(**kwargs)
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(path, **replay):
        for fn, kwargs in replayed:
            fn(**kwargs)
    return info.value


def _messages(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text} for text in texts]


def test_prompt_drift_names_the_step_and_shows_a_json_diff(trace_path: Path) -> None:
    first = {"model": "m", "messages": _messages("find me a flight")}
    second = {"model": "m", "messages": _messages("find me a flight", "to Lisbon")}
    error = _diverge(
        trace_path,
        [(chat, first), (chat, second)],
        [(chat, first), (chat, {"model": "m", "messages": _messages("find me a flight", "to Porto")})],
    )
    message = str(error)
    assert error.step == 1 and error.reason == CONTENT
    assert message.startswith("rewind: replay diverged at step 1: prompt/content drift")
    assert "recorded step 1: llm 'chat'" in message and "incoming call: llm 'chat'" in message
    assert '-      "content": "to Lisbon",' in error.diff and '+      "content": "to Porto",' in error.diff
    assert error.diff.startswith("--- recorded step 1\n+++ incoming call")
    assert "changed at: messages[1].content" in message
    assert error.got["kind"] == "llm" and error.got["name"] == "chat" and error.got["request"]["messages"][1]
    assert error.expected.seq == 1 and "re-record" in error.hint


@pytest.mark.parametrize(
    ("recorded", "incoming"),
    [
        ({"prompt": "hi", "request_id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
         {"prompt": "hi", "request_id": "6fa459ea-ee8a-3ca4-894e-db77e160355e"}),
        ({"prompt": "It is 2026-11-29T10:00:00Z. Plan my day."},
         {"prompt": "It is 2026-11-30T08:15:42Z. Plan my day."}),
        ({"prompt": "hi", "sent_at": 1795996674.65}, {"prompt": "hi", "sent_at": 1795999999.01}),
        ({"prompt": "hi", "nonce": "a3f9c2e81b7d4e6f"}, {"prompt": "hi", "nonce": "0b1c2d3e4f5a6b7c"}),
        ({"prompt": "hi", "prompt_cache_key": "agent_9f8e7d6c5b4a"},
         {"prompt": "hi", "prompt_cache_key": "agent_1a2b3c4d5e6f"}),
    ],
    ids=["uuid", "timestamp-in-text", "epoch", "hex-id", "prefixed-id"],
)
def test_a_volatile_field_suggests_normalize(
    trace_path: Path, recorded: dict[str, Any], incoming: dict[str, Any]
) -> None:
    error = _diverge(trace_path, [(chat, recorded)], [(chat, incoming)])
    assert error.reason == VOLATILE
    assert "normalize=" in error.hint and "normalize=" in str(error)


def test_a_changed_tool_schema_is_tool_schema_drift(trace_path: Path) -> None:
    base = {"model": "m", "messages": _messages("search please"), "tools": [SEARCH_TOOL]}
    changed_tool = {**SEARCH_TOOL, "function": {**SEARCH_TOOL["function"], "description": "web search"}}
    error = _diverge(trace_path, [(chat, base)], [(chat, {**base, "tools": [changed_tool]})])
    assert error.reason == TOOLS and "tool definitions" in error.hint
    assert '+        "description": "web search",' in error.diff


def test_a_call_recorded_at_a_later_step_is_order_drift(trace_path: Path) -> None:
    error = _diverge(
        trace_path,
        [(search, {"query": "a"}), (search, {"query": "b"})],
        [(search, {"query": "b"})],
    )
    assert error.reason == ORDER and error.step == 0 and "match='parallel'" in error.hint
    assert "nearest recorded candidate: step 1 (tool 'search', 100% similar)" in str(error)


def test_repeating_a_call_that_was_already_served_is_not_order_drift(trace_path: Path) -> None:
    error = _diverge(
        trace_path,
        [(search, {"query": "a"}), (search, {"query": "b"})],
        [(search, {"query": "a"}), (search, {"query": "a"})],
    )
    assert error.reason == CONTENT and error.step == 1


def test_another_function_is_a_call_name_mismatch(trace_path: Path) -> None:
    error = _diverge(trace_path, [(search, {"query": "x"})], [(lookup, {"query": "x"})])
    assert error.reason == NAME and "name='<old name>'" in error.hint
    assert "recorded step 0: tool 'search'" in str(error) and "incoming call: tool 'lookup'" in str(error)


def test_another_kind_of_call_is_a_kind_mismatch(trace_path: Path) -> None:
    error = _diverge(trace_path, [(search, {"query": "x"})], [(chat, {"prompt": "x"})])
    assert error.reason == KIND and error.diff == ""
    assert 'incoming request: {"prompt": "x"}' in str(error)


def test_a_run_longer_than_its_recording(trace_path: Path) -> None:
    error = _diverge(trace_path, [(search, {"query": "x"})], [(search, {"query": "x"}), (search, {"query": "y"})])
    assert error.reason == LONGER and error.step == 1 and error.expected is None
    assert "nothing left to serve (the trace has 1 step)" in str(error) and "rewind.fork(path, at=1)" in error.hint


def test_long_values_are_elided_around_the_change(trace_path: Path) -> None:
    system = {"role": "system", "content": "You are a meticulous travel agent. " * 100}
    before = {"messages": [system, {"role": "user", "content": "book " + "x" * 500 + " LIS"}]}
    after = {"messages": [system, {"role": "user", "content": "book " + "x" * 500 + " OPO"}]}
    error = _diverge(trace_path, [(chat, before)], [(chat, after)])
    lines = error.diff.splitlines()
    assert max(len(line) for line in lines) < 200
    changed = [line for line in lines if line.startswith(("-  ", "+  "))]
    assert len(changed) == 2 and changed[0].endswith(' LIS",') and changed[1].endswith(' OPO",')
    assert '"content": "…(466 chars)xxx' in changed[0]
    # Unchanged long values are shortened too.
    assert system["content"] not in str(error)


def test_huge_diffs_are_cut_short() -> None:
    diff = request_diff({"items": list(range(200))}, {"items": list(range(1000, 1200))}, step=4)
    lines = diff.splitlines()
    assert len(lines) == 61 and lines[-1].startswith("... (") and lines[-1].endswith("more diff lines)")


def test_the_nearest_candidate_points_at_what_the_agent_probably_meant(trace_path: Path) -> None:
    error = _diverge(
        trace_path,
        [(search, {"query": "weather in Paris"}), (search, {"query": "hotels in Rome"}),
         (search, {"query": "museums in Paris"})],
        [(search, {"query": "weather in Paris"}), (search, {"query": "museums in Paris!"})],
    )
    assert error.step == 1 and "nearest recorded candidate: step 2 (tool 'search'" in str(error)


def test_classify_on_its_own() -> None:
    trace = Trace([Event(0, "tool", "t", "fp-a", {"q": "a"}), Event(1, "tool", "t", "fp-b", {"q": "b"})])

    def incoming(fp: str, request: Any, kind: str = "tool", name: str = "t") -> IncomingCall:
        return IncomingCall(kind, name, fp, request, request)

    assert classify(trace, 0, incoming("fp-b", {"q": "b"}), trace[0]) == ORDER
    # Once step 1 is served, the same call is no longer order drift.
    assert classify(trace, 0, incoming("fp-b", {"q": "b"}), trace[0], unserved=lambda i: i == 0) == CONTENT
    assert classify(trace, 2, incoming("fp-c", {"q": "c"}), None) == LONGER
    assert classify(trace, 0, incoming("fp-c", {"q": "a"}, kind="llm"), trace[0]) == KIND
    assert classify(trace, 0, incoming("fp-c", {"q": "a"}, name="u"), trace[0]) == NAME


def test_fuzzy_and_parallel_misses_say_why_nothing_fit(trace_path: Path) -> None:
    recorded = [(search, {"query": "weather in Paris"}), (chat, {"prompt": "summarize"})]
    fuzzy = _diverge(trace_path, recorded, [(search, {"query": "tell me a joke"})], match="fuzzy")
    assert "is 4" in str(fuzzy) or "below the threshold 60%" in str(fuzzy)
    assert "below the threshold 60%" in str(fuzzy) and fuzzy.step == 0
    parallel = _diverge(trace_path, recorded, [(search, {"query": "weather in Pariss"})], match="parallel")
    assert "only exact calls" in str(parallel) and parallel.reason == CONTENT and parallel.step == 0
