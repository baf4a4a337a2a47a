"""``rewind.refresh(path, agent)``: a golden refreshed from its first divergence, in process."""

from __future__ import annotations

from pathlib import Path

import pytest

import rewind
from rewind.storage.trace import Trace

CALLS: list[str] = []


@rewind.llm(name="draft")
def draft(prompt: str) -> dict[str, object]:
    CALLS.append(f"draft:{prompt}")
    return {"text": f"Draft for: {prompt}", "usage": {"prompt_tokens": 10, "completion_tokens": 5}, "model": "gpt-4o"}


@rewind.tool(name="hotels")
def hotels(city: str) -> list[str]:
    CALLS.append(f"hotels:{city}")
    return [f"Hotel {city}"]


def weekend(style: str, *, stop_early: bool = False) -> str:
    plan = draft("plan a weekend in Porto")
    found = hotels("Porto")
    if stop_early:
        return str(found)
    return str(draft(f"{style} summary of {plan['text']} with {found}")["text"])


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "weekend.rewind"
    with rewind.record(path):
        weekend("A short")
    CALLS.clear()
    return path


def test_refresh_keeps_the_prefix_and_prices_it(golden: Path) -> None:
    report = rewind.refresh(golden, lambda: weekend("A detailed"))
    assert CALLS == ["draft:A detailed summary of Draft for: plan a weekend in Porto with ['Hotel Porto']"]
    assert (report.kept, report.anew, report.recorded) == (2, (2,), 3)
    assert report.divergence == {"step": 2, "reason": "prompt/content drift"}
    # The kept draft call is priced as accounting prices it (gpt-4o: $2.50 in, $10 out per 1M).
    assert (report.saved.calls, report.saved.total_tokens, report.kept_tools) == (1, 15, 1)
    assert report.saved.total_cost == pytest.approx(10 * 2.5e-6 + 5 * 10e-6)
    assert report.spent.total_tokens == 15
    assert "50% of the 30 tokens a full re-record would use" in report.lines(None)[1]
    assert [(e.seq, e.live) for e in Trace.load(golden).events] == [(0, False), (1, False), (2, True)]


def test_an_agent_that_raises_leaves_the_golden_untouched(golden: Path) -> None:
    before = golden.read_bytes()

    def broken() -> None:
        weekend("A detailed")
        raise RuntimeError("the agent crashed after its live step")

    with pytest.raises(RuntimeError, match="crashed"):
        rewind.refresh(golden, broken)
    assert golden.read_bytes() == before
    assert [p.name for p in golden.parent.iterdir()] == [golden.name]


def test_a_run_that_ends_earlier_drops_the_rest(golden: Path) -> None:
    report = rewind.refresh(golden, lambda: weekend("A short", stop_early=True))
    assert CALLS == []
    assert report.changed and (report.kept, report.anew) == (2, ())
    assert report.lines(None)[0].endswith("(the run ended after step 1; the golden had 3)")
    assert len(Trace.load(golden).events) == 2


def test_an_unchanged_run_writes_nothing(golden: Path, tmp_path: Path) -> None:
    before = golden.stat().st_mtime_ns
    report = rewind.refresh(golden, lambda: weekend("A short"))
    assert not report.changed and CALLS == []
    assert golden.stat().st_mtime_ns == before
    copy = tmp_path / "copy.rewind"
    rewind.refresh(golden, lambda: weekend("A short"), save_as=copy)
    assert len(Trace.load(copy).events) == 3  # save_as= always gets the run it asked for


def test_refresh_needs_a_positional_match(golden: Path) -> None:
    with pytest.raises(ValueError, match="needs match='strict' or 'ordered'"):
        rewind.refresh(golden, lambda: None, match="fuzzy")


def test_diff_and_show_tell_a_refresh(golden: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.rewind"
    rewind.refresh(golden, lambda: weekend("A detailed"), save_as=fresh)
    diff = rewind.diff_traces(golden, fresh)
    assert diff.notes == [
        f"run B is a refresh of {golden}: its steps were replayed while the requests matched, the rest recorded live"
    ]
    assert diff.first_divergence is not None and diff.first_divergence.step == 2


def test_the_environment_opens_a_refresh(golden: Path, tmp_path: Path) -> None:
    from rewind.inspection.summary import refreshed
    from rewind.setup.bootstrap import EnvironmentConfigError, session_from_environment

    fresh = tmp_path / "fresh.rewind"
    env = {"REWIND_REPLAY": str(golden), "REWIND_REFRESH": "1", "REWIND_SAVE_AS": str(fresh)}
    session = session_from_environment(env)
    assert session is not None
    with session:
        weekend("A detailed")
    assert [e.live for e in Trace.load(fresh).events] == [False, False, True]
    status = {"served": session.cursor, "recorded": len(session.new_events), "live_from": 2}
    assert refreshed(status, "weekend.rewind", "fresh.rewind") == (
        "rewind: refreshed weekend.rewind from step 2: 2 steps replayed, 1 live, saved to fresh.rewind"
    )
    with pytest.raises(EnvironmentConfigError, match="REWIND_REFRESH needs REWIND_SAVE_AS"):
        session_from_environment({"REWIND_REPLAY": str(golden), "REWIND_REFRESH": "1"})
