"""Hybrid replay (issue 30): some calls live, the rest served by identity; never_live; on_missing.

A small tool agent with decorated calls whose "world" (what the model says, what a tool
returns) a test changes between the recording and the hybrid run; the real functions
count their calls, so a test knows what really ran.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.engine.policy import ReplayPolicy, Selector
from rewind.errors import DivergenceError, FuzzyMatchWarning, NeverLiveError


class World:
    """What the live side answers, and which real functions ran."""

    def __init__(self) -> None:
        self.city = "Lisbon"
        self.price = 120
        self.ran: list[str] = []


@pytest.fixture
def world() -> World:
    return World()


def make_agent(world: World) -> Any:
    @rewind.llm(name="plan")
    def plan(**request: Any) -> dict[str, Any]:
        world.ran.append("plan")
        return {"city": world.city, "model": request["model"]}

    @rewind.tool(name="search_flights")
    def search_flights(city: str) -> dict[str, Any]:
        world.ran.append("search_flights")
        return {"flight": f"RW1 to {city}", "price": world.price}

    @rewind.tool(name="refund")
    def refund(amount: int) -> str:
        world.ran.append("refund")
        return f"refunded {amount}"

    @rewind.llm(name="answer")
    def answer(**request: Any) -> str:
        world.ran.append("answer")
        return f"Booked {request['flight']['flight']} for {request['flight']['price']}"

    def run(model: str = "gpt-4o-mini") -> tuple[str, str]:
        step = plan(model=model, task="a trip")
        flight = search_flights(step["city"])
        back = refund(5)
        return answer(model=model, flight=flight), back

    return run


@pytest.fixture
def recorded(world: World, trace_path: Path) -> Path:
    agent = make_agent(world)
    with rewind.record(trace_path):
        agent()
    world.ran.clear()
    return trace_path


# -- the policy -------------------------------------------------------------------------
def test_selectors_pick_by_kind_by_kind_and_name_and_by_bare_name() -> None:
    policy = ReplayPolicy.of(live=["tool:search_flights", "memory"], never_live="refund")
    assert policy.runs_live("tool", "search_flights") and policy.runs_live("memory", "kb")
    assert not policy.runs_live("tool", "other") and not policy.runs_live("llm", "plan")
    assert policy.forbids("tool", "refund") and policy.forbids("llm", "refund")
    # never_live wins over live
    assert ReplayPolicy.of(live=["tool"], never_live=["refund"]).forbids("tool", "refund")
    assert Selector.parse("tool:x", "live=") == Selector("tool", "x")
    assert ReplayPolicy.of(model_map="a=b, c=d").model_map == {"a": "b", "c": "d"}


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"live": ["toll:search"]}, "KIND:NAME"),
        ({"live": [""]}, "call selectors"),
        ({"on_missing": "skip"}, "on_missing="),
        ({"model_map": ["gpt-4o-mini"]}, "RECORDED=LIVE"),
    ],
)
def test_a_bad_policy_is_refused_before_the_run(recorded: Path, options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        rewind.replay(recorded, **options)


def test_a_positional_matcher_is_refused_for_a_hybrid_replay(recorded: Path) -> None:
    with pytest.raises(ValueError, match="'parallel' or 'fuzzy'"):
        rewind.replay(recorded, live=["llm"], match="strict")
    with pytest.raises(ValueError, match="hybrid run"):
        rewind.replay(recorded, save_as=recorded.with_name("x.rewind"))


# -- live llm, served tools ----------------------------------------------------------------
def test_live_llm_serves_every_tool_from_the_recording(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    with rewind.replay(recorded, live=["llm"]) as session:
        result = agent()
    # The model ran for real; no tool did (not even refund): their answers came from the trace.
    assert world.ran == ["plan", "answer"]
    assert result == ("Booked RW1 to Lisbon for 120", "refunded 5")
    assert session.divergences == []


@pytest.mark.filterwarnings("ignore::rewind.UnconsumedEventsWarning")
def test_live_llm_answering_differently_finds_served_calls_by_identity(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    world.city = "Porto"  # the live model now asks for another city: no recorded answer fits
    with pytest.raises(DivergenceError) as caught, rewind.replay(recorded, live=["llm"]):
        agent()
    message = str(caught.value)
    # It names the call, the nearest recorded one (its request diff) and what to do.
    assert "incoming call: tool 'search_flights'" in message
    assert "recorded step 1: tool 'search_flights'" in message
    assert '"Lisbon"' in message and '"Porto"' in message
    assert "on_missing='live'" in message
    assert world.ran == ["plan"]


def test_on_missing_live_runs_the_unanswered_call_live(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    world.city = "Porto"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recorded Lisbon search is left unserved
        with rewind.replay(recorded, live=["llm"], on_missing="live"):
            result = agent()
    assert world.ran == ["plan", "search_flights", "answer"]  # refund still served
    assert result[0] == "Booked RW1 to Porto for 120"


def test_served_calls_are_found_out_of_order(world: World, trace_path: Path) -> None:
    agent = make_agent(world)
    with rewind.record(trace_path):
        agent()
    world.ran.clear()

    @rewind.tool(name="refund")
    def refund(amount: int) -> str:
        raise AssertionError("served, never run")

    @rewind.tool(name="search_flights")
    def search_flights(city: str) -> dict[str, Any]:
        raise AssertionError("served, never run")

    @rewind.llm(name="plan")
    def plan(**request: Any) -> str:
        return "live"

    with rewind.replay(trace_path, live=["llm"]):
        plan(model="x", task="y")
        assert refund(5) == "refunded 5"  # recorded after the search
        assert search_flights("Lisbon")["price"] == 120


# -- served llm, live tools ----------------------------------------------------------------
def test_live_tools_with_a_changed_result_and_the_model_served_fuzzy(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    world.price = 95  # the flight API drifted
    saved = recorded.with_name("tools-live.rewind")
    hybrid = rewind.replay(recorded, live=["tool:search_flights"], match="fuzzy", save_as=saved)
    with pytest.warns(FuzzyMatchWarning), hybrid:
        result = agent()
    # The tool ran live (95), refund did not run, the model's recorded answer was served.
    assert world.ran == ["search_flights"]
    assert result == ("Booked RW1 to Lisbon for 120", "refunded 5")
    diff = rewind.diff_traces(recorded, saved)
    changed = [entry for entry in diff.entries if entry.op != "equal"]
    assert [(e.kind, e.name) for e in changed] == [("tool", "search_flights")]
    assert changed[0].b is not None and changed[0].b.response["price"] == 95


@pytest.mark.filterwarnings("ignore::rewind.UnconsumedEventsWarning")
def test_live_tools_with_the_default_parallel_matcher_name_the_model_call(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    world.price = 95
    with pytest.raises(DivergenceError, match="incoming call: llm 'answer'"), rewind.replay(recorded, live=["tool"]):
        agent()


# -- never_live --------------------------------------------------------------------------
def test_never_live_wins_over_live(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    with rewind.replay(recorded, live=["tool"], never_live=["refund"], match="fuzzy"):
        assert agent()[1] == "refunded 5"
    assert "refund" not in world.ran and "search_flights" in world.ran


@pytest.mark.filterwarnings("ignore::rewind.UnconsumedEventsWarning")
def test_never_live_without_a_fitting_answer_stops_the_call(world: World, recorded: Path) -> None:
    @rewind.tool(name="refund")
    def refund(amount: int) -> str:
        world.ran.append("refund")
        return "refunded"

    hybrid = rewind.replay(recorded, live=["tool"], never_live=["refund"], match="fuzzy")
    with hybrid as session, pytest.raises(NeverLiveError) as caught:
        refund(999)
    assert world.ran == []  # nothing reached the real function
    message = str(caught.value)
    assert "tool call 'refund' (step 0 of this run) must never run for real" in message
    assert "recorded step 2: tool 'refund'" in message  # the nearest recorded one
    assert session.divergences == [caught.value]  # fails the run even if the agent swallowed it


@pytest.mark.filterwarnings("ignore::rewind.UnconsumedEventsWarning")
def test_never_live_in_a_fork_serves_the_recorded_answer_or_stops(world: World, recorded: Path) -> None:
    agent = make_agent(world)
    forked = recorded.with_name("fork.rewind")
    with rewind.fork(recorded, at=1, never_live=["refund"], save_as=forked):
        assert agent()[1] == "refunded 5"
    assert world.ran == ["search_flights", "answer"]  # past the fork point, but refund was served
    steps = rewind.Trace.load(forked).events
    refund_step = next(e for e in steps if e.name == "refund")
    assert refund_step.live is False and refund_step.seq == 2

    @rewind.tool(name="refund")
    def refund(amount: int) -> str:
        raise AssertionError("must never run")

    stops = pytest.raises(NeverLiveError, match="no unserved recorded tool 'refund' step has this call's request")
    with rewind.fork(recorded, at=0, never_live=["tool:refund"]), stops:
        refund(6)
    with pytest.raises(ValueError, match="apply to replay"):
        rewind.fork(recorded, at=0, policy=ReplayPolicy.of(live=["llm"]))


# -- model_map, save_as, show, diff, report ---------------------------------------------------
def test_save_as_writes_the_hybrid_run_and_every_view_marks_served_and_live(
    world: World, recorded: Path, tmp_path: Path
) -> None:
    from rewind.cli._common import Output
    from rewind.cli.show import render_listing
    from rewind.report import render_report
    from rewind.report._payload import Embedder, Limits
    from rewind.report._trace_data import build_section

    agent = make_agent(world)
    world.city = "Lisbon"
    saved = tmp_path / "hybrid.rewind"
    with rewind.replay(recorded, live=["llm"], never_live=["refund"], save_as=saved):
        agent()
    trace = rewind.Trace.open(saved)
    hybrid = trace.header["hybrid_of"]
    assert hybrid["path"] == str(recorded) and hybrid["live"] == ["llm"] and hybrid["never_live"] == ["refund"]
    assert [(e.seq, e.name, e.live) for e in trace.events] == [
        (0, "plan", True),
        (1, "search_flights", False),
        (2, "refund", False),
        (3, "answer", True),
    ]
    listing = render_listing(trace, verbose=False, out=Output(color=False, pager=False), columns=120)
    assert "this run is a hybrid replay of" in listing
    assert "live {" not in listing and "  live " in listing and "↺ " in listing
    diff = rewind.render_text(rewind.diff_traces(recorded, saved))
    assert "[B: live]" in diff and "[B: ↺ served]" in diff and "run B is a hybrid replay" in diff
    section = build_section(trace, Embedder(Limits())).data
    assert [flags for flags in section["columns"]["flags"]] == [["live"], [], [], ["live"]]
    assert any("hybrid replay of" in note for note in section["notes"])
    assert b"hybrid replay of" in render_report(saved).html


@pytest.mark.filterwarnings("ignore::rewind.UnconsumedEventsWarning")
def test_a_served_call_after_the_live_side_added_steps_is_renumbered(world: World, recorded: Path) -> None:
    saved = recorded.with_name("extra.rewind")

    @rewind.llm(name="plan")
    def plan(**request: Any) -> str:
        return "live"

    @rewind.tool(name="search_flights")
    def search_flights(city: str) -> dict[str, Any]:
        raise AssertionError("served")

    with rewind.replay(recorded, live=["llm"], save_as=saved):
        for _ in range(3):
            plan(model="x")
        search_flights("Lisbon")
    steps = rewind.Trace.load(saved).events
    assert [e.seq for e in steps] == [0, 1, 2, 3]
    assert steps[3].live is False and steps[3].get("served_from") == 1


def test_model_map_rewrites_live_openai_calls_and_serves_tools(stub: Any, trace_path: Path) -> None:
    openai = pytest.importorskip("openai")
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    ran: list[str] = []

    @rewind.tool
    def get_weather(city: str) -> str:
        ran.append(city)
        return f"rain in {city}"

    def agent() -> str:
        client = openai.OpenAI(base_url=stub.openai_base_url, api_key="sk-stub", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "What is the weather in city=Paris today"}]
        while True:
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            message = reply.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = get_weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    unpatch = rewind.patch_openai()
    try:
        with rewind.record(trace_path):
            recorded_answer = agent()
        assert ran == ["Paris"] and recorded_answer == "Based on the tool result: rain in Paris"
        before = stub.request_count
        # The live model answers differently this time: the same tool call, then its own words.
        stub.add_script(
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            "Take an umbrella.",
        )
        saved = trace_path.with_name("gpt-4.1.rewind")
        with rewind.replay(trace_path, live=["llm"], model_map={"gpt-4o-mini": "gpt-4.1"}, save_as=saved):
            answer = agent()
    finally:
        unpatch()
    assert answer == "Take an umbrella."
    assert ran == ["Paris"]  # the tool was served
    live_requests = stub.requests[before:]
    assert [r.body["model"] for r in live_requests] == ["gpt-4.1", "gpt-4.1"]
    steps = rewind.Trace.load(saved).events
    assert [(e.kind, e.live) for e in steps] == [("llm", True), ("tool", False), ("llm", True)]
    assert steps[0].request["model"] == "gpt-4.1"


def test_step_spans_say_whether_they_were_served(recorded: Path, run_python: Any) -> None:
    result = run_python(
        f"""
        import json
        import rewind
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from rewind.telemetry import TRACERS

        memory = InMemorySpanExporter()
        TRACERS.private_provider().add_span_processor(SimpleSpanProcessor(memory))

        @rewind.llm(name="plan")
        def plan(**request):
            return {{"city": "Lisbon"}}

        @rewind.tool(name="search_flights")
        def search_flights(city):
            raise AssertionError("served")

        with rewind.replay({str(recorded)!r}, live=["llm"]):
            plan(model="gpt-4o-mini", task="a trip")
            search_flights("Lisbon")
        spans = [s for s in memory.get_finished_spans() if "rewind.kind" in s.attributes]
        print(json.dumps([[s.attributes["rewind.name"], s.attributes.get("rewind.served"),
                           s.attributes.get("rewind.replayed")] for s in spans]))
        """
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == [["plan", False, None], ["search_flights", True, True]]
