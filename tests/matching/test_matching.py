"""Matching strategies end to end: record with decorated functions, replay with each matcher."""

from __future__ import annotations

import asyncio
import random
import warnings
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.matching import (
    FuzzyMatcher,
    IncomingCall,
    Matcher,
    OrderedMatcher,
    ParallelMatcher,
    StrictMatcher,
    register_matcher,
    resolve_matcher,
)
from rewind.matching.similarity import set_similarity
from rewind.storage.trace import Event, Trace

LIVE: list[str] = []


@rewind.llm
def chat(prompt: str) -> str:
    LIVE.append(prompt)
    return f"answer to {prompt}"


@rewind.tool
def search(query: str) -> str:
    LIVE.append(query)
    return f"results for {query}"


@rewind.tool
def fetch(query: str) -> str:
    LIVE.append(query)
    return f"page for {query}"


_counter = {"n": 0}


@rewind.tool
def ticket(kind: str) -> int:
    _counter["n"] += 1
    return _counter["n"]


@pytest.fixture(autouse=True)
def _clear_live() -> None:
    LIVE.clear()


def _record(path: Path, calls: list[tuple[Any, str]]) -> None:
    with rewind.record(path):
        for fn, arg in calls:
            fn(arg)
    LIVE.clear()


TRIP = [
    (chat, "plan a trip to paris in june for two people"),
    (search, "paris hotels near the louvre"),
    (search, "paris flights from boston"),
    (chat, "summarize the hotel and flight findings for paris"),
]


# -- resolution ------------------------------------------------------------------
def test_strategy_names_resolve_to_fresh_matchers() -> None:
    assert isinstance(resolve_matcher("strict"), StrictMatcher)
    assert isinstance(resolve_matcher("ordered"), OrderedMatcher)
    assert isinstance(resolve_matcher("fuzzy"), FuzzyMatcher)
    assert isinstance(resolve_matcher("parallel"), ParallelMatcher)
    assert resolve_matcher("parallel") is not resolve_matcher("parallel")
    configured = FuzzyMatcher(threshold=0.8, window=16)
    assert resolve_matcher(configured) is configured
    assert (configured.threshold, configured.window) == (0.8, 16)
    for matcher in (StrictMatcher(), OrderedMatcher(), FuzzyMatcher(), ParallelMatcher()):
        assert isinstance(matcher, Matcher)


def test_bad_strategies_fail_when_the_session_is_made(trace_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown match strategy 'exact'.*'fuzzy'.*'parallel'"):
        rewind.replay(trace_path, match="exact")
    with pytest.raises(TypeError, match="write FuzzyMatcher\\(\\)"):
        rewind.replay(trace_path, match=FuzzyMatcher)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strategy name or a Matcher"):
        rewind.fork(trace_path, at=0, match=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        FuzzyMatcher(threshold=1.5)
    with pytest.raises(ValueError, match="window"):
        FuzzyMatcher(window=0)
    with pytest.raises(TypeError, match="similarity"):
        FuzzyMatcher(similarity="lexical")  # type: ignore[arg-type]


# -- strict and ordered ------------------------------------------------------------
def test_strict_serves_the_exact_run_and_fails_on_any_drift(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with rewind.replay(trace_path, match=StrictMatcher()) as session:
        assert [fn(arg) for fn, arg in TRIP] == [f"answer to {TRIP[0][1]}", *(f"results for {a}" for _, a in TRIP[1:3]),
                                                f"answer to {TRIP[3][1]}"]
    assert LIVE == [] and session.cursor == 4
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path):
        chat(TRIP[0][1])
        search(TRIP[2][1])  # recorded at step 2, asked at step 1
    assert info.value.step == 1 and info.value.reason == "order drift" and "match='parallel'" in str(info.value)


def test_ordered_warns_on_drift_but_refuses_a_different_kind(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with pytest.warns(rewind.ReplayDriftWarning, match="served by position") as record, rewind.replay(
        trace_path, match="ordered"
    ):
        assert chat("a refactored prompt") == f"answer to {TRIP[0][1]}"
        assert fetch("a renamed tool") == f"results for {TRIP[1][1]}"  # name drift is drift too
        with pytest.raises(rewind.DivergenceError) as info:
            chat("a model call where a tool call was recorded")
        search(TRIP[2][1])
        chat(TRIP[3][1])
    assert len(record) == 2 and all(w.filename == __file__ for w in record)
    assert info.value.reason == "call kind mismatch" and info.value.step == 2


# -- fuzzy -------------------------------------------------------------------------
def test_fuzzy_serves_exact_runs_silently(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rewind.replay(trace_path, match="fuzzy", require_full_consumption=True):
            for fn, arg in TRIP:
                fn(arg)


def test_fuzzy_serves_a_similar_request_with_a_warning(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with pytest.warns(rewind.FuzzyMatchWarning, match=r"step 0 \(llm 'chat'\).*similarity 0\.\d\d") as record, \
            rewind.replay(trace_path, match="fuzzy") as session:
        assert chat("plan a trip to paris in july for two people") == f"answer to {TRIP[0][1]}"
        for fn, arg in TRIP[1:]:
            fn(arg)
    assert len(record) == 1 and record[0].filename == __file__
    assert LIVE == [] and session.cursor == 4


def test_fuzzy_refuses_a_match_below_its_threshold(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path, match="fuzzy"):
        chat("what is the capital of mongolia?")
    message = str(info.value)
    assert "below the threshold 60%" in message and info.value.reason == "prompt/content drift"
    # A stricter matcher refuses what the default accepts.
    with pytest.raises(rewind.DivergenceError), rewind.replay(trace_path, match=FuzzyMatcher(threshold=0.95)):
        chat("plan a trip to paris in july for two people")


def test_fuzzy_never_crosses_kind_or_call_name(trace_path: Path) -> None:
    _record(trace_path, [(search, "paris hotels")])
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path, match="fuzzy"):
        fetch("paris hotels")  # identical arguments, another tool
    assert info.value.reason == "call name mismatch" and "never crosses kind or name" in str(info.value)
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path, match="fuzzy"):
        chat("paris hotels")
    assert info.value.reason == "call kind mismatch"


def test_fuzzy_never_rewinds_to_a_served_event(trace_path: Path) -> None:
    _record(trace_path, [(search, "paris hotels")])
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path, match="fuzzy"):
        search("paris hotels")
        search("paris hotels")
    assert info.value.reason == "run longer than the recording"


def test_fuzzy_skips_a_removed_step_with_a_warning_and_reports_it_unconsumed(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with pytest.warns(rewind.FuzzyMatchWarning, match=r"passing over unserved step\(s\) 1\b"), pytest.warns(
        rewind.UnconsumedEventsWarning, match=r"1 recorded step never served \(step 1\)"
    ), rewind.replay(trace_path, match="fuzzy"):
        chat(TRIP[0][1])
        search(TRIP[2][1])  # the refactored agent no longer searches hotels
        chat(TRIP[3][1])
    # In CI the skipped step is a failure.
    with pytest.warns(rewind.FuzzyMatchWarning), pytest.raises(rewind.RewindError, match="require_full_consumption"), \
            rewind.replay(trace_path, match="fuzzy", require_full_consumption=True):
        chat(TRIP[0][1])
        search(TRIP[2][1])
        chat(TRIP[3][1])


def test_fuzzy_finds_swapped_calls_both_ways(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with pytest.warns(rewind.FuzzyMatchWarning) as record, rewind.replay(
        trace_path, match="fuzzy", require_full_consumption=True
    ):
        chat(TRIP[0][1])
        assert search(TRIP[2][1]) == f"results for {TRIP[2][1]}"
        assert search(TRIP[1][1]) == f"results for {TRIP[1][1]}"
        chat(TRIP[3][1])
    messages = [str(w.message) for w in record]
    assert any("passing over" in m for m in messages) and any("going back" in m for m in messages)


def test_fuzzy_looks_only_as_far_ahead_as_its_window(trace_path: Path) -> None:
    calls = [(search, f"filler query number {i}") for i in range(10)] + [(chat, "the final summary")]
    _record(trace_path, calls)
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path, match="fuzzy"):
        chat("the final summary")  # 10 steps ahead, window 8
    assert "no unserved llm 'chat' call within the window (steps 0–7)" in str(info.value)
    assert info.value.reason == "order drift"  # it is recorded, just further on
    with pytest.warns(rewind.FuzzyMatchWarning, match="passing over"), pytest.warns(rewind.UnconsumedEventsWarning), \
            rewind.replay(trace_path, match=FuzzyMatcher(window=16)):
        assert chat("the final summary") == "answer to the final summary"


def test_fuzzy_uses_a_given_or_installed_similarity(trace_path: Path) -> None:
    _record(trace_path, [(search, "alpha")])
    everything_matches = FuzzyMatcher(similarity=lambda a, b: 1.0 if "alpha" in b else 0.0)
    with pytest.warns(rewind.FuzzyMatchWarning, match="similarity 1.00"), rewind.replay(
        trace_path, match=everything_matches
    ):
        assert search("omega") == "results for alpha"
    seen: list[tuple[str, str]] = []

    def spy(a: Any, b: Any) -> float:
        seen.append((a, b))
        return 0.99

    previous = set_similarity(spy)
    try:
        with pytest.warns(rewind.FuzzyMatchWarning), rewind.replay(trace_path, match="fuzzy"):
            search("omega")
    finally:
        assert set_similarity(previous) is spy
    # The backend compares the two requests as canonical JSON text.
    assert seen == [('{"query":"omega"}', '{"query":"alpha"}')]


# -- parallel ----------------------------------------------------------------------
def test_parallel_serves_by_identity_in_any_order(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    order = [TRIP[3], TRIP[2], TRIP[0], TRIP[1]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rewind.replay(trace_path, match="parallel", require_full_consumption=True) as session:
            answers = [fn(arg) for fn, arg in order]
    assert answers[0] == f"answer to {TRIP[3][1]}" and answers[1] == f"results for {TRIP[2][1]}"
    assert LIVE == [] and session.cursor == 4


def test_parallel_serves_identical_duplicates_first_in_first_out(trace_path: Path) -> None:
    _counter["n"] = 0
    with rewind.record(trace_path):
        assert [ticket("seat"), ticket("meal"), ticket("seat")] == [1, 2, 3]
    with rewind.replay(trace_path, match="parallel") as session:
        assert ticket("seat") == 1
        assert ticket("seat") == 3
        assert ticket("meal") == 2
        with pytest.raises(rewind.DivergenceError) as info:
            ticket("seat")
    assert _counter["n"] == 3 and session.cursor == 3
    assert info.value.reason == "run longer than the recording"
    assert "recorded 2 time(s) and every one was already served" in str(info.value)


def test_parallel_is_still_exact(trace_path: Path) -> None:
    _record(trace_path, TRIP)
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(trace_path, match="parallel"):
        search("paris flights from boston!")
    error = info.value
    assert error.reason == "prompt/content drift" and error.step == 2  # the most similar unserved search
    assert "only exact calls" in str(error) and '+  "query": "paris flights from boston!"' in error.diff


def test_parallel_replays_concurrent_agents_repeatedly(trace_path: Path) -> None:
    rng = random.Random(7)

    @rewind.tool
    async def lookup(agent: int, item: int) -> str:
        await asyncio.sleep(rng.random() / 500)
        return f"{agent}:{item}"

    @rewind.llm
    async def think(agent: int, facts: list[str]) -> str:
        await asyncio.sleep(rng.random() / 500)
        return f"agent {agent} knows {len(facts)} facts"

    async def agent(number: int) -> str:
        facts = await asyncio.gather(*(lookup(number, item) for item in range(3)))
        return await think(number, sorted(facts))

    async def main() -> list[str]:
        return await asyncio.gather(*(agent(n) for n in range(3)))

    with rewind.record(trace_path):
        expected = asyncio.run(main())
    assert len(Trace.load(trace_path)) == 12
    for _ in range(3):
        with rewind.replay(trace_path, match="parallel", require_full_consumption=True):
            assert asyncio.run(main()) == expected


# -- a matcher of one's own ----------------------------------------------------------
class NewestFirst:
    """A toy strategy: serve the latest unserved recorded event with the call's name."""

    positional = False

    def start(self, trace: Trace) -> None:
        self.left = list(range(len(trace.events)))

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        from rewind.matching.divergence import divergence

        for index in reversed(self.left):
            if trace.events[index].name == call.name:
                self.left.remove(index)
                return trace.events[index]
        raise divergence(trace, cursor, call, None)


def test_a_user_matcher_plugs_in_by_instance_or_registered_name(trace_path: Path) -> None:
    _record(trace_path, [(search, "first"), (search, "second")])
    assert isinstance(NewestFirst(), Matcher)
    with rewind.replay(trace_path, match=NewestFirst()) as session:
        assert search("anything") == "results for second"
        assert search("anything") == "results for first"
        with pytest.raises(rewind.DivergenceError, match="run longer than the recording"):
            search("anything")
    assert session.cursor == 2
    register_matcher("newest-first", NewestFirst)
    with rewind.replay(trace_path, match="newest-first"):
        assert search("x") == "results for second"
        search("x")


def test_the_parallel_agents_demo_replays_offline_repeatedly(run_python, tmp_path: Path) -> None:
    result = run_python(
        f"""
        import runpy, sys
        sys.argv = ["parallel_agents_demo.py", {str(tmp_path / "agents.rewind")!r}]
        runpy.run_path("examples/parallel_agents_demo.py", run_name="__main__")
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "recorded 21 calls from 3 concurrent agents" in out
    assert out.count("identical answers") == 3 and "no model server and no tool was reached" in out
    assert len(Trace.load(tmp_path / "agents.rewind")) == 21
