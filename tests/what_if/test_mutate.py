"""Fault injection from a recording: ``rewind.what_if.mutate`` with the real openai/anthropic SDKs."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from dropping_proxy import DroppingProxy
from what_if_agent import LIVE, client, record, run_agent

import rewind
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer
from rewind.testing.pytest_plugin import assert_resilient, resilience_cases
from rewind.what_if import FAULTS, FaultError, MutateError, Mutation, mutate, plan

UNUSED = "http://127.0.0.1:9/v1"  # nothing listens: only the trace can answer


@pytest.fixture(autouse=True)
def _patched() -> Any:
    LIVE.clear()
    unpatch = [rewind.patch_openai(), rewind.patch_anthropic()]
    yield
    for undo in unpatch:
        undo()


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.rewind"
    record(path)
    LIVE.clear()
    return path


def agent() -> dict[str, Any]:
    return run_agent(client(UNUSED))


def _by_id(report: Any) -> dict[str, Any]:
    return {r.mutation.id: r for r in report.results}


def test_each_fault_is_classified_by_what_the_agent_did(golden: Path) -> None:
    faults = [
        "rate_limit",
        "server_error",
        "overloaded",
        "timeout",
        "empty_content",
        "malformed_tool_args",
        "tool_error",
    ]
    report = mutate(golden, agent, faults=faults, retry_after="0.05", timeout=20)
    results = _by_id(report)
    assert report.baseline == {"tools": ["get_weather", "get_weather"], "answer": "Umbrella for Paris only."}
    # The agent's own retry code waits for retry-after, then the recording answers the retry.
    assert results["step0-rate_limit"].outcome == "same"
    assert results["step3-rate_limit"].outcome == "same"
    assert results["step0-server_error"].outcome == "crashed"
    assert results["step0-server_error"].error == "openai.InternalServerError"
    assert results["step0-overloaded"].error == "openai.InternalServerError"
    assert "529" in results["step0-overloaded"].detail
    assert results["step3-timeout"].error == "openai.APITimeoutError"
    assert results["step0-empty_content"].outcome == "different"
    assert results["step0-empty_content"].answer == {"tools": [], "answer": ""}
    assert results["step0-malformed_tool_args"].outcome == "crashed"
    assert results["step0-malformed_tool_args"].error == "json.decoder.JSONDecodeError"
    # A failing tool is reported to the model, whose request then differs from the recording.
    assert results["step1-tool_error"].outcome == "diverged"
    assert "at step 3" in results["step1-tool_error"].detail
    assert LIVE == []  # nothing ran live
    table = report.table()
    assert "step0-rate_limit" not in table and "recovered, same answer" in table
    assert "summary: 2 same, 2 different, 7 crashed, 2 diverged" in table
    data = json.loads(report.to_json())
    assert data["counts"]["crashed"] == report.counts()["crashed"] > 0
    assert {r["fault"] for r in data["results"]} == set(faults)


def test_injected_errors_are_the_sdks_own_classes(golden: Path) -> None:
    mutation = next(m for m in plan(golden, faults=["rate_limit"], retry_after="9") if m.step == 0)
    with (
        pytest.warns(rewind.UnconsumedEventsWarning),
        mutation.session(),
        pytest.raises(openai.RateLimitError) as caught,
    ):
        run_agent(client(UNUSED), retry_rate_limits=False)
    error = caught.value
    assert isinstance(error, openai.APIStatusError) and error.status_code == 429
    assert error.response.headers["retry-after"] == "9"
    assert error.body == {
        "error": {"message": "Rate limit reached.", "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}
    }


def test_a_tool_error_with_live_goes_on_live(golden: Path) -> None:
    with StubServer(script=["No forecast for Paris; Tokyo is dry."]) as server:
        base = server.openai_base_url
        report = mutate(golden, lambda: run_agent(client(base)), faults=["tool_error"], steps=[1], live=True)
    (result,) = report.results
    assert result.outcome == "different"
    assert result.answer["answer"] == "No forecast for Paris; Tokyo is dry."


def test_a_fault_that_makes_the_agent_hang_is_reported_within_the_bound(golden: Path) -> None:
    stuck = threading.Event()

    def stubborn() -> Any:
        try:
            return run_agent(client(UNUSED), retry_rate_limits=False)
        except openai.RateLimitError:
            stuck.wait(60)  # "wait until the quota resets": never, here
            raise

    started = time.perf_counter()
    report = mutate(golden, stubborn, faults=["rate_limit"], steps=[0], timeout=1.0)
    took = time.perf_counter() - started
    stuck.set()
    (result,) = report.results
    assert result.outcome == "hung" and "no answer after 1s" in result.detail
    assert took < 10


def _live_drop(path: Path, agent: Any, script: list[Any] | None = None) -> str:
    """The error class the SDK raises, recorded, when the connection drops mid-stream live."""
    with StubServer(script=script) as server, DroppingProxy(server.url) as proxy, rewind.record(path):
        try:
            agent(proxy.url)
        except Exception:
            pass  # the SDK's error, recorded
        else:
            pytest.fail("the dropped connection did not reach the agent")
    error = Trace.load(path).events[-1].error
    assert error is not None
    return str(error["type"])


def test_stream_faults(tmp_path: Path) -> None:
    path = tmp_path / "stream.rewind"
    answer = "Take an umbrella to Paris, leave it in Tokyo."
    record(path, [answer], stream=True)
    live = _live_drop(tmp_path / "drop.rewind", lambda url: run_agent(client(url + "/v1"), stream=True), [answer])
    report = mutate(
        path, lambda: run_agent(client(UNUSED), stream=True), faults=["connection_reset", "truncated_stream"]
    )
    results = _by_id(report)
    assert results["step0-connection_reset"].outcome == "crashed"
    # openai 1.40 lets httpx's error through; 3.x's stream raises APIConnectionError.
    assert results["step0-connection_reset"].error == live
    truncated = results["step0-truncated_stream"]
    assert truncated.outcome == "different"
    assert "Take an umbrella to Paris, leave it in Tokyo.".startswith(truncated.answer["answer"])


def test_anthropic_overloaded_is_an_overloaded_error(tmp_path: Path) -> None:
    path = tmp_path / "claude.rewind"
    request = {"model": "claude-stub", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    with StubServer() as server, rewind.record(path):
        anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="stub", max_retries=0).messages.create(
            **request
        )
    claude = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="stub", max_retries=0)
    (mutation,) = plan(path, faults=["overloaded"])
    with mutation.session(), pytest.raises(anthropic.OverloadedError) as caught:
        claude.messages.create(**request)
    assert caught.value.status_code == 529
    assert caught.value.response.headers["retry-after"] == "1"


def test_memory_and_tool_faults_on_decorated_functions(tmp_path: Path) -> None:
    @rewind.memory
    def recall(topic: str) -> list[str]:
        return [f"{topic} note"]

    def notes() -> str:
        found = recall("paris")
        return "nothing remembered" if not found else found[0]

    path = tmp_path / "memory.rewind"
    with rewind.record(path):
        assert notes() == "paris note"
    report = mutate(path, notes)
    assert [(r.mutation.fault, r.outcome, r.answer) for r in report.results] == [
        ("empty_retrieval", "different", "nothing remembered")
    ]


def test_the_plan_is_deterministic_per_seed(golden: Path) -> None:
    everything = plan(golden)
    assert everything == plan(golden)
    assert {m.fault for m in everything} <= set(FAULTS)
    assert [m.id for m in everything][:3] == ["step0-rate_limit", "step0-server_error", "step0-overloaded"]
    sampled = [m.id for m in plan(golden, seed=7, max_runs=4)]
    assert sampled == [m.id for m in plan(golden, seed=7, max_runs=4)]
    assert len(sampled) == 4
    assert any([m.id for m in plan(golden, seed=s, max_runs=4)] != sampled for s in range(8))


def test_stream_cut_points_follow_the_seed(tmp_path: Path) -> None:
    path = tmp_path / "stream.rewind"
    record(path, ["one two three four five six seven eight nine ten eleven twelve " * 4], stream=True)
    source = Trace.load(path).events[0]

    def cut(seed: int) -> int:
        (mutation,) = plan(path, faults=["truncated_stream"], seed=seed)
        session = mutation.session()
        change = session._match.changes[0]  # type: ignore[union-attr]
        return len(change.event.get("stream")["chunks"])

    assert cut(1) == cut(1)
    assert {cut(s) for s in range(6)} != {cut(1)}
    assert all(0 < cut(s) < len(source.get("stream")["chunks"]) for s in range(3))


# --------------------------------------------------------------------------- unhappy paths


def test_unknown_faults_and_steps_fail_before_anything_runs(golden: Path) -> None:
    with pytest.raises(FaultError, match="unknown fault 'gremlins'"):
        plan(golden, faults=["gremlins"])
    with pytest.raises(ValueError, match="has no step 9"):
        plan(golden, steps=[9])
    mutation = Mutation(str(golden), 1, 1, "tool", "get_weather", "rate_limit")
    with pytest.raises(FaultError, match="does not apply to step 1"):
        mutation.session()


def test_a_run_that_does_not_replay_cleanly_cannot_be_mutated(golden: Path) -> None:
    def other_agent() -> Any:
        return client(UNUSED).chat.completions.create(model="x", messages=[{"role": "user", "content": "?"}])

    with pytest.raises(MutateError, match=r"the unmutated replay of .* diverged"):
        mutate(golden, other_agent)


# --------------------------------------------------------------------------- the pytest helper

GOLDEN = Path(__file__).parent / "traces-do-not-exist" / "golden.rewind"


@pytest.mark.parametrize("mutation", resilience_cases(GOLDEN))
def test_a_missing_golden_trace_gives_one_skipped_case(mutation: Any) -> None:
    raise AssertionError("never runs: the case is skipped")


def test_resilience_cases_and_assert_resilient(golden: Path) -> None:
    cases = resilience_cases(golden, faults=["rate_limit", "server_error"], steps=[0])
    assert [case.id for case in cases] == ["step0-rate_limit", "step0-server_error"]
    survived = assert_resilient(cases[0].values[0], agent)
    assert survived.outcome == "same"
    with pytest.raises(pytest.fail.Exception, match=r"with server_error injected at step 0 .* crashed"):
        assert_resilient(cases[1].values[0], agent)


@pytest.mark.parametrize("sdk", ["groq", "together", "fireworks"])
def test_rate_limits_of_other_generated_sdks_are_their_own_classes(sdk: str, tmp_path: Path) -> None:
    module = pytest.importorskip(sdk)
    cls = {"groq": "Groq", "together": "Together", "fireworks": "Fireworks"}[sdk]
    undo = getattr(rewind, f"patch_{sdk}")()
    try:
        request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        path = tmp_path / f"{sdk}.rewind"
        with StubServer() as server, rewind.record(path):
            getattr(module, cls)(base_url=server.url, api_key="stub", max_retries=0).chat.completions.create(**request)
        offline = getattr(module, cls)(base_url="http://127.0.0.1:9", api_key="stub", max_retries=0)
        (mutation,) = plan(path, faults=["rate_limit"])
        with mutation.session(), pytest.raises(module.RateLimitError) as caught:
            offline.chat.completions.create(**request)
        assert caught.value.status_code == 429
        assert caught.value.response.headers["retry-after"] == "1"
    finally:
        undo()


def test_anthropic_stream_faults_and_an_async_agent(tmp_path: Path) -> None:
    request = {
        "model": "claude-stub",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello there my friend"}],
    }
    path = tmp_path / "claude-stream.rewind"
    with StubServer() as server, rewind.record(path):
        live = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="stub", max_retries=0)
        with live.messages.stream(**request) as stream:
            assert "".join(stream.text_stream) == "Echo: hello there my friend"

    async def agent() -> str:
        claude = anthropic.AsyncAnthropic(base_url="http://127.0.0.1:9", api_key="stub", max_retries=0)
        async with claude.messages.stream(**request) as stream:
            return "".join([text async for text in stream.text_stream])

    def live_agent(url: str) -> None:
        claude = anthropic.Anthropic(base_url=url, api_key="stub", max_retries=0)
        with claude.messages.stream(**request) as stream:
            "".join(stream.text_stream)

    live = _live_drop(tmp_path / "drop.rewind", live_agent)
    report = mutate(path, agent, faults=["overloaded", "connection_reset", "truncated_stream"])
    assert report.baseline == "Echo: hello there my friend"
    results = _by_id(report)
    assert results["step0-overloaded"].error == "anthropic.OverloadedError"
    assert results["step0-connection_reset"].error == live  # httpx's (httpx2's from anthropic 1.x) error
    assert results["step0-truncated_stream"].outcome == "different"
    assert "Echo: hello there my friend".startswith(results["step0-truncated_stream"].answer)
