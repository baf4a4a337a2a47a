"""The ``rewind_trace`` marker's hybrid replay: ``live=["llm"]`` runs the model and serves the
tools from the golden trace, so CI checks a model or prompt change against recorded tool results."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

HYBRID = """
import os

import pytest
import rewind

RAN = []


@rewind.llm(name="model")
def model(prompt):
    RAN.append("model")
    return os.environ.get("ANSWER", "SFO") + " for " + prompt


@rewind.tool(name="search")
def search(query):
    RAN.append("search")
    return [query.split()[0], "JFK"]


@pytest.mark.rewind_trace("traces/hybrid.rewind", live=["llm"], never_live=["search"])
def test_flight(rewind_session):
    hits = search(model("a flight").split()[0])
    if os.environ.get("EXPECT_LIVE"):
        assert RAN == ["model"]  # the model ran live, the tool was served
    assert hits[0] == "SFO"
"""


def test_a_hybrid_marker_runs_the_model_live_and_serves_the_tools(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANSWER", "EXPECT_LIVE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_agent=textwrap.dedent(HYBRID))
    assert pytester.runpytest_subprocess("--rewind-record").ret == 0

    monkeypatch.setenv("EXPECT_LIVE", "1")
    pytester.runpytest_subprocess().assert_outcomes(passed=1)

    # The live model answers LAX now: the tool it asks has no recorded answer, and
    # never_live keeps the real search from running.
    monkeypatch.setenv("ANSWER", "LAX")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*never_live: tool call 'search'*must never run for real*"])
