"""Replaying a trace another program recorded: the hint fits the evidence.

Found as a new user would: a trace 17% like the program suggested ``--match fuzzy`` /
``--match ordered``; following it with ``ordered`` served the other program's answers
(the agent printed ``None``) and exited 0.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.matching.divergence import CONTENT, FOREIGN_BELOW
from rewind.stub_server import StubServer

RunCli = Callable[..., Any]

TRAVEL = (
    "import openai\n"
    "client = openai.OpenAI(max_retries=0)\n"
    "for city in ('Lisbon', 'Porto'):\n"
    "    r = client.chat.completions.create(model='gpt-4o-mini', messages=[\n"
    "        {'role': 'system', 'content': 'You are a travel agent. Plan trips day by day, with budgets.'},\n"
    "        {'role': 'user', 'content': f'Plan a weekend in {city} for two people on a budget'}])\n"
    "    print(r.choices[0].message.content)\n"
)
TRANSLATE = (
    "import openai\n"
    "client = openai.OpenAI(max_retries=0)\n"
    "for text in ('the cat sleeps', 'the dog barks'):\n"
    "    r = client.chat.completions.create(model='gpt-4o', temperature=0, messages=[\n"
    "        {'role': 'user', 'content': f'Translate into French, word for word: {text}'}])\n"
    "    print(r.choices[0].message.content)\n"
)


@pytest.fixture
def travel_trace(run_cli: RunCli, tmp_path: Path) -> Iterator[dict[str, str]]:
    server = StubServer().start()
    env = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-test"}
    try:
        recorded = run_cli("record", "run.rewind", "--", sys.executable, "-c", TRAVEL, env=env)
    finally:
        server.stop()
    assert recorded.returncode == 0, recorded.stderr
    yield env  # the server is gone: a replay that went live would fail to connect


def test_a_strict_replay_of_another_programs_trace_says_re_record_not_loosen(
    run_cli: RunCli, travel_trace: dict[str, str]
) -> None:
    result = run_cli("replay", "run.rewind", "--", sys.executable, "-c", TRANSLATE, env=travel_trace)
    assert result.returncode != 0
    assert f"replay diverged at step 0: {CONTENT}" in result.stderr, result.stderr
    hint = next(line for line in result.stderr.splitlines() if line.strip().startswith("hint:"))
    assert "another program" in hint and "rewind record TRACE -- CMD" in hint, hint
    assert "--match fuzzy" not in hint and "tolerate" not in hint, hint


def test_an_ordered_replay_that_drifts_on_every_step_fails(run_cli: RunCli, travel_trace: dict[str, str]) -> None:
    result = run_cli(
        "replay", "run.rewind", "--match", "ordered", "--", sys.executable, "-c", TRANSLATE, env=travel_trace
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "served all 2 steps by position to calls that did not match their recording" in result.stderr
    assert "--tolerate-drift" in result.stderr  # in the CLI's words
    tolerated = run_cli(
        "replay",
        "run.rewind",
        "--match",
        "ordered",
        "--tolerate-drift",
        "--",
        sys.executable,
        "-c",
        TRANSLATE,
        env=travel_trace,
    )
    assert tolerated.returncode == 0, tolerated.stderr
    assert "ReplayDriftWarning" in tolerated.stderr  # still warned, step by step


def test_an_ordered_replay_of_the_same_program_with_one_changed_prompt_passes(
    run_cli: RunCli, travel_trace: dict[str, str]
) -> None:
    changed = TRAVEL.replace("('Lisbon', 'Porto')", "('Lisbon', 'Faro')")
    result = run_cli(
        "replay", "run.rewind", "--match", "ordered", "--", sys.executable, "-c", changed, env=travel_trace
    )
    assert result.returncode == 0, result.stderr
    strict = run_cli("replay", "run.rewind", "--", sys.executable, "-c", changed, env=travel_trace)
    assert "prompt/content drift" in strict.stderr and "--match fuzzy" in strict.stderr, strict.stderr


# -- the Python API -------------------------------------------------------------------------


@rewind.llm(name="model")
def model(**request: Any) -> dict[str, Any]:
    return {"answer": f"about {request}"}


def test_the_python_api_fails_an_all_drifted_ordered_replay_unless_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "run.rewind"
    travel = "You are a travel agent. Plan trips day by day, with budgets, for two people on a weekend"
    with rewind.record(path):
        model(system=travel, city="Lisbon")
    with pytest.raises(rewind.DivergenceError) as info, rewind.replay(path):
        model(words=["translate", "the cat sleeps"], target_language="fr", temperature=0)
    assert info.value.reason == CONTENT and "another program" in info.value.hint
    assert "rewind.record(path)" in info.value.hint and "match='fuzzy'" not in info.value.hint
    drift_failure = pytest.raises(rewind.RewindError, match="tolerate_drift=True")
    with pytest.warns(rewind.ReplayDriftWarning), drift_failure, rewind.replay(path, match="ordered"):
        model(words=["translate", "the cat sleeps"], target_language="fr", temperature=0)
    with pytest.warns(rewind.ReplayDriftWarning), rewind.replay(path, match="ordered", tolerate_drift=True):
        model(words=["translate", "the cat sleeps"], target_language="fr", temperature=0)
    assert 0 < FOREIGN_BELOW < 0.5
