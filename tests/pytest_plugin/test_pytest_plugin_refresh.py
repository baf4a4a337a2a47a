"""``--rewind-record-mode=refresh``: only goldens whose replay diverged are re-recorded, and
only from their divergence; the rest of the run is kept from the golden."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rewind import Trace

pytest_plugins = ["pytester"]

TESTS = """
import os

import pytest

import rewind


def _log(name):
    with open(os.environ["AGENT_LOG"], "a") as fh:
        fh.write(name + "\\n")


@rewind.llm
def model(prompt):
    _log(f"model:{prompt}")
    return {"text": "SFO for " + prompt}


@rewind.tool
def search(query):
    _log(f"search:{query}")
    return [query.split()[0], "JFK"]


@pytest.mark.rewind_trace("traces/trip.rewind")
def test_trip(rewind_session):
    plan = model("plan a trip")
    hits = search(plan["text"] + os.environ.get("AGENT_FILTER", ""))
    final = model(f"pick from {hits}")
    assert final["text"].startswith(os.environ.get("EXPECT", "SFO"))


@pytest.mark.rewind_trace("traces/steady.rewind")
def test_steady(rewind_session):
    assert search("LAX nonstop")[0] == "LAX"
"""

TRIP = Path("traces/trip.rewind")
STEADY = Path("traces/steady.rewind")


@pytest.fixture
def recorded(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Both goldens recorded; returns the file listing the calls that ran live."""
    log = tmp_path / "live.log"
    monkeypatch.setenv("AGENT_LOG", str(log))
    monkeypatch.delenv("AGENT_FILTER", raising=False)
    monkeypatch.delenv("EXPECT", raising=False)
    project.makepyfile(test_trip=textwrap.dedent(TESTS))
    result = project.runpytest_subprocess("--rewind-record")
    assert result.ret == 0, result.stdout.str()
    log.unlink()
    return log


def test_refresh_rerecords_only_the_diverged_golden_from_its_divergence(
    project: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steady_before = (project.path / STEADY).read_bytes()
    golden_before = Trace.load(project.path / TRIP)
    monkeypatch.setenv("AGENT_FILTER", " nonstop")  # the search at step 1 now asks something else

    result = project.runpytest_subprocess("--rewind-record-mode=refresh")

    assert result.ret == 0, result.stdout.str()
    # Step 0 (the first model call) was kept from the golden: it did not run again.
    assert recorded.read_text().splitlines() == [
        "search:SFO for plan a trip nonstop",
        "model:pick from ['SFO', 'JFK']",
    ]
    refreshed = Trace.load(project.path / TRIP)
    assert [(e.seq, e.kind, e.live) for e in refreshed.events] == [
        (0, "llm", False),
        (1, "tool", True),
        (2, "llm", True),
    ]
    assert refreshed.events[0].response == golden_before.events[0].response
    assert "SFO for plan a trip nonstop" in str(refreshed.events[1].request)
    # The golden that still replays is left alone, byte for byte.
    assert (project.path / STEADY).read_bytes() == steady_before
    assert not (project.path / "traces/steady.rewind.refresh.html").exists()
    page = project.path / "traces/trip.rewind.refresh.html"
    assert '"view":"diff"' in page.read_text(encoding="utf-8")  # rewind diff --html's page
    result.stdout.fnmatch_lines(
        [
            "*rewind golden traces*",
            "1 replayed, 1 refreshed",
            "  refreshed: traces/trip.rewind (kept step 0 from the recording, recorded steps 1-2 anew "
            "(step 1 diverged: *); diff beside it: trip.rewind.refresh.html)",
        ]
    )

    # The refreshed golden replays offline, with the new filter.
    recorded.unlink()
    replay = project.runpytest_subprocess()
    assert replay.ret == 0, replay.stdout.str()
    assert not recorded.exists()


def test_a_refresh_whose_test_fails_leaves_the_golden_untouched(
    project: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = (project.path / TRIP).read_bytes()
    monkeypatch.setenv("AGENT_FILTER", " nonstop")
    monkeypatch.setenv("EXPECT", "LHR")  # the live part runs, then the test fails

    result = project.runpytest_subprocess("--rewind-record-mode=refresh", "test_trip.py::test_trip")

    result.assert_outcomes(failed=1)
    assert (project.path / TRIP).read_bytes() == before
    assert not (project.path / "traces/trip.rewind.refresh.html").exists()
    assert not list((project.path / "traces").glob("*.recording-*"))
    result.stdout.fnmatch_lines(
        [
            "*rewind: the test failed while refreshing, so traces/trip.rewind is unchanged.*",
            "*not refreshed (the test failed; the golden is unchanged): traces/trip.rewind*",
        ]
    )


def test_refresh_records_a_missing_golden(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "live.log"))
    project.makepyfile(test_trip=textwrap.dedent(TESTS))
    result = project.runpytest_subprocess("--rewind-record-mode=refresh", "test_trip.py::test_steady")
    assert result.ret == 0, result.stdout.str()
    assert [e.kind for e in Trace.load(project.path / STEADY).events] == ["tool"]
