"""``rewind.fork``: history up to step N from the trace, live after it, with every matcher."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.matching import IncomingCall
from rewind.storage.trace import Event, Trace

LIVE: list[str] = []


@rewind.llm
def model(prompt: str) -> str:
    LIVE.append(prompt)
    return f"model says: {prompt}"


@rewind.tool
def tool(query: str, token: str = "") -> str:
    LIVE.append(query)
    return f"tool found: {query}"


def pipeline(topic: str, *, fix: bool = False) -> list[str]:
    """Six steps; ``fix`` changes what happens from step 3 on."""
    out = [model(f"plan research on {topic}")]
    out.append(tool(f"{topic} sources"))
    out.append(tool(f"{topic} statistics"))
    out.append(model(f"draft a report on {topic}" + (" citing every source" if fix else "")))
    out.append(tool(f"check the {topic} draft"))
    out.append(model(f"final answer on {topic}"))
    return out


@pytest.fixture
def recorded(trace_path: Path) -> Path:
    with rewind.record(trace_path, meta={"ticket": "T-1"}):
        pipeline("tides")
    LIVE.clear()
    return trace_path


def test_fork_serves_the_prefix_then_goes_live(recorded: Path, tmp_path: Path) -> None:
    fixed = tmp_path / "fixed.rewind"
    with rewind.fork(recorded, at=3, save_as=fixed) as session:
        result = pipeline("tides", fix=True)
    assert LIVE == ["draft a report on tides citing every source", "check the tides draft", "final answer on tides"]
    assert result[3] == "model says: draft a report on tides citing every source"
    assert session.mode == "fork" and session.cursor == 3
    suffix = [(e.seq, e.name, e.live) for e in session.new_events]
    assert suffix == [(3, "model", True), (4, "tool", True), (5, "model", True)]

    saved = Trace.load(fixed)
    assert saved.header["forked_from"]["path"] == str(recorded)
    assert saved.header["forked_from"]["at"] == 3 and saved.header["forked_from"]["match"] == "strict"
    assert saved.header["forked_from"]["created"] == Trace.load(recorded).header["created"]
    assert saved.meta == {"ticket": "T-1"}
    assert [(e.seq, e.live) for e in saved] == [(0, False), (1, False), (2, False), (3, True), (4, True), (5, True)]

    # The forked run is a trace of its own: it replays from step 0, offline.
    LIVE.clear()
    with rewind.replay(fixed, require_full_consumption=True):
        assert pipeline("tides", fix=True) == result
    assert LIVE == []


def test_fork_at_the_end_extends_a_finished_run(recorded: Path, tmp_path: Path) -> None:
    longer = tmp_path / "longer.rewind"
    with rewind.fork(recorded, at=len(Trace.open(recorded)), save_as=longer) as session:
        pipeline("tides")
        model("one more question")
    assert LIVE == ["one more question"]
    assert [e.seq for e in session.new_events] == [6]
    assert len(Trace.load(longer)) == 7


def test_fork_at_zero_runs_everything_live(recorded: Path) -> None:
    with rewind.fork(recorded, at=0) as session:
        pipeline("tides")
    assert len(LIVE) == 6 and [e.seq for e in session.new_events] == [0, 1, 2, 3, 4, 5]


def test_fork_points_outside_the_trace_are_refused(recorded: Path, tmp_path: Path) -> None:
    too_far = rewind.fork(recorded, at=7, save_as=tmp_path / "never.rewind")
    with pytest.raises(ValueError, match=r"fork\(at=7\) is past the end .* 6 steps; at=6 extends"), too_far:
        pass
    assert not (tmp_path / "never.rewind").exists()
    for bad in (-1, True, 2.5, "3"):
        with pytest.raises(ValueError, match="step number"):
            rewind.fork(recorded, at=bad)  # type: ignore[arg-type]


def test_drift_before_the_fork_point_still_diverges(recorded: Path) -> None:
    with pytest.raises(rewind.DivergenceError) as info, rewind.fork(recorded, at=3):
        pipeline("currents")
    assert info.value.step == 0 and LIVE == []


@pytest.mark.parametrize("match", ["strict", "ordered", "fuzzy", "parallel"])
def test_fork_works_with_every_matcher(recorded: Path, tmp_path: Path, match: str) -> None:
    fixed = tmp_path / f"{match}.rewind"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an exact prefix is served without any warning
        with rewind.fork(recorded, at=3, match=match, save_as=fixed) as session:
            pipeline("tides", fix=True)
    assert LIVE == ["draft a report on tides citing every source", "check the tides draft", "final answer on tides"]
    assert [e.seq for e in session.new_events] == [3, 4, 5]
    saved = Trace.load(fixed)
    assert saved.header["forked_from"]["match"] == match and [e.seq for e in saved] == [0, 1, 2, 3, 4, 5]
    LIVE.clear()
    with rewind.replay(fixed, match=match, require_full_consumption=True):
        pipeline("tides", fix=True)
    assert LIVE == []


def test_fuzzy_fork_serves_an_approximate_prefix_and_goes_live_for_good_on_a_miss(recorded: Path) -> None:
    with pytest.warns(rewind.FuzzyMatchWarning, match="step 0"), pytest.warns(
        rewind.UnconsumedEventsWarning, match=r"step 2\)"
    ), rewind.fork(recorded, at=3, match="fuzzy") as session:
        assert model("plan research on the tides") == "model says: plan research on tides"
        tool("tides sources")
        model("something else entirely, nothing like the recording")  # prefix step 2 is a tool: live
        tool("tides statistics")  # would match prefix step 2, but the fork already went live
    assert LIVE == ["something else entirely, nothing like the recording", "tides statistics"]
    assert [e.seq for e in session.new_events] == [3, 4]


def test_parallel_fork_serves_prefix_calls_that_arrive_after_live_ones(recorded: Path, tmp_path: Path) -> None:
    # Concurrent calls cross the fork point in any order.
    fixed = tmp_path / "fixed.rewind"
    with rewind.fork(recorded, at=3, match="parallel", save_as=fixed) as session:
        tool("check the tides draft")  # recorded at step 4: past the fork point, live
        assert tool("tides statistics") == "tool found: tides statistics"  # prefix step 2
        model("plan research on tides")  # prefix step 0
        tool("tides sources")  # prefix step 1
        model("draft a report on tides")  # recorded at step 3: live
    assert LIVE == ["check the tides draft", "draft a report on tides"]
    # Live steps number after the whole prefix, so no seq is used twice.
    assert [e.seq for e in session.new_events] == [3, 4]
    assert [e.seq for e in Trace.load(fixed)] == [0, 1, 2, 3, 4]


def test_parallel_fork_reports_prefix_steps_never_asked_for(recorded: Path) -> None:
    leftover = pytest.warns(rewind.UnconsumedEventsWarning, match=r"1 recorded step never served \(step 1\)")
    with leftover, rewind.fork(recorded, at=3, match="parallel"):
        model("plan research on tides")
        tool("tides statistics")
        tool("tides sources, reworded")  # no exact prefix match: live
    assert LIVE == ["tides sources, reworded"]


def test_fork_redacts_the_live_suffix(recorded: Path, tmp_path: Path) -> None:
    def scrub(payload: Any) -> Any:
        return json.loads(json.dumps(payload).replace("sk-secret", "[REDACTED]"))

    fixed = tmp_path / "fixed.rewind"
    with rewind.fork(recorded, at=6, save_as=fixed, redact=scrub):
        pipeline("tides")
        tool("authenticated lookup", token="sk-secret")
    text = fixed.read_text()
    assert "sk-secret" not in text and "[REDACTED]" in text


class FirstByName:
    """Serves the first unserved event with the call's name; not positional."""

    positional = False

    def start(self, trace: Trace) -> None:
        self.left = list(range(len(trace.events)))

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        raise AssertionError("fork() must use serve_prefix")

    def serve_prefix(
        self, cursor: int, kind: str, name: str, fp: str, request: Any, trace: Trace, limit: int
    ) -> Event | None:
        for index in self.left:
            if index < limit and trace.events[index].name == name:
                self.left.remove(index)
                return trace.events[index]
        return None


class NoPrefix:
    positional = False

    def start(self, trace: Trace) -> None:
        pass

    def match(self, cursor: int, call: IncomingCall, trace: Trace) -> Event:
        raise AssertionError("unreachable")


def test_a_user_matcher_forks_through_serve_prefix(recorded: Path) -> None:
    with rewind.fork(recorded, at=2, match=FirstByName()) as session:
        assert tool("anything") == "tool found: tides sources"  # prefix step 1
        assert model("whatever") == "model says: plan research on tides"  # prefix step 0
        tool("tides statistics")  # step 2 is past the fork point: live
    assert LIVE == ["tides statistics"] and [e.seq for e in session.new_events] == [2]


class WholeCalls(FirstByName):
    """Answers through serve_prefix_call, which is given the IncomingCall itself."""

    def serve_prefix_call(self, cursor: int, call: IncomingCall, trace: Trace, limit: int) -> Event | None:
        self.seen = [*getattr(self, "seen", []), (call.name, call.is_async)]
        return super().serve_prefix(cursor, call.kind, call.name, call.fingerprint, call.request, trace, limit)


class OverridesServePrefix(WholeCalls):
    """Overrides serve_prefix alone: its answer, not the inherited serve_prefix_call's, counts."""

    def serve_prefix(
        self, cursor: int, kind: str, name: str, fp: str, request: Any, trace: Trace, limit: int
    ) -> Event | None:
        return None  # everything live


def test_a_fork_hands_serve_prefix_call_the_whole_call_unless_a_subclass_overrides_serve_prefix(
    recorded: Path,
) -> None:
    whole = WholeCalls()
    with rewind.fork(recorded, at=2, match=whole):
        assert model("whatever") == "model says: plan research on tides"  # served from the prefix
        assert tool("anything") == "tool found: tides sources"
    assert whole.seen == [("model", False), ("tool", False)]  # sync decorated calls
    overriding = OverridesServePrefix()
    with warnings.catch_warnings(), rewind.fork(recorded, at=2, match=overriding):
        warnings.simplefilter("ignore", rewind.UnconsumedEventsWarning)
        assert model("whatever") == "model says: whatever"  # live
    assert not hasattr(overriding, "seen")


def test_a_non_positional_matcher_without_serve_prefix_cannot_fork(recorded: Path) -> None:
    session = rewind.fork(recorded, at=2, match=NoPrefix())
    with pytest.raises(TypeError, match="positional = False but has no serve_prefix"), session:
        pass
    # Plain replay does not need it.
    with pytest.raises(AssertionError, match="unreachable"), rewind.replay(recorded, match=NoPrefix()):
        model("plan research on tides")
