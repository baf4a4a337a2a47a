"""``rewind fork TRACE --at N --runs K -j J -- CMD``: K live runs of an unmodified agent, judged.

The stub model answers the forked step with a seeded random choice, so which answers the K
runs get is known before they run: the first K draws of ``random.Random(SEED)``.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import what_if_agent

from rewind import wilson_interval
from rewind.storage.trace import Trace
from rewind.stub_server import StubServer

RunCli = Callable[..., subprocess.CompletedProcess[str]]

TESTS = Path(__file__).resolve().parent.parent
AGENT = TESTS / "refresh_agent.py"
SEED = 1
RUNS = 6
ANSWERS = ["Umbrella for Paris only.", "Umbrellas for both."]
WEIGHTS = [3, 1]
#: The tool turn, then the answer drawn at random: what each forked run's live step gets.
SCRIPT = [what_if_agent.SCRIPT[0], {"one_of": ANSWERS, "weights": WEIGHTS}]


def _expected_answers(count: int) -> list[str]:
    """The server draws from random.Random(SEED), one draw per run (each run asks once)."""
    rng = random.Random(SEED)
    return [rng.choices(ANSWERS, weights=WEIGHTS)[0] for _ in range(count)]


def _env(server: StubServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "stub", "PYTHONPATH": str(TESTS)}


@pytest.fixture
def golden(run_cli: RunCli, tmp_path: Path) -> Path:
    path = tmp_path / "golden.rewind"
    with StubServer(script=what_if_agent.SCRIPT, script_mode="conversation") as server:
        result = run_cli("record", path, "--", sys.executable, AGENT, env=_env(server))
    assert result.returncode == 0, result.stderr
    return path


def test_runs_distribution_and_wilson_interval_match_the_seeded_model(
    run_cli: RunCli, golden: Path, tmp_path: Path
) -> None:
    expected = _expected_answers(RUNS)
    paris = expected.count(ANSWERS[0])
    assert 0 < paris < RUNS  # the seed gives both answers, so there are two groups
    page = tmp_path / "verdict.html"
    with StubServer(script=SCRIPT, script_mode="conversation", seed=SEED) as server:
        result = run_cli(
            "fork", golden, "--at", 3, "--runs", RUNS, "-j", 3, "--expect-output", "Paris only",
            "--html", page, "--", sys.executable, AGENT, env=_env(server),
        )  # fmt: skip
        assert server.request_count == RUNS  # steps 0-2 were served: one live call per run
    assert result.returncode == 0, result.stderr
    low, high = wilson_interval(paris, RUNS)
    lines = result.stdout.splitlines()
    assert lines[0] == f"{RUNS} runs of {golden} forked at step 3, saved in {tmp_path / 'golden.runs'}"
    assert lines[-1] == (
        f"success (output matches /Paris only/): {paris}/{RUNS} = {paris / RUNS:.0%}, "
        f"95% interval {low:.1%}-{high:.1%} (Wilson)"
    )
    assert low < 0.75 < high  # the model's true rate lies inside
    groups = lines[1:-1]
    assert len(groups) == 2
    major, minor = (ANSWERS[0], ANSWERS[1]) if paris * 2 >= RUNS else (ANSWERS[1], ANSWERS[0])
    assert f"exit 0  '{major}'  [same path;" in groups[0]
    assert f"exit 0  '{minor}'  [differs from step 3;" in groups[1]

    # Every run's trace, output and verdict are in the folder.
    folder = tmp_path / "golden.runs"
    verdict = json.loads((folder / "verdict.json").read_text())
    assert verdict["successes"] == paris and verdict["runs"] == RUNS
    assert verdict["interval"] == {"low": low, "high": high, "confidence": 0.95, "method": "wilson"}
    finals = sorted(r["final_output"] for r in verdict["results"])
    assert finals == sorted(expected)
    for number in range(1, RUNS + 1):
        trace = Trace.load(folder / f"run-{number:03d}.rewind")
        assert [e.live for e in trace.events] == [False, False, False, True]
        assert (folder / f"run-{number:03d}.out").read_text().splitlines()[-1] in ANSWERS

    html = page.read_text(encoding="utf-8")
    assert f"{paris}/{RUNS}" in html and "Wilson" in html
    assert '"view":"trace"' in (tmp_path / "verdict.group-1.html").read_text(encoding="utf-8")
    assert '"view":"diff"' in (tmp_path / "verdict.group-2.diff.html").read_text(encoding="utf-8")


def test_runs_json_and_a_trace_criterion(run_cli: RunCli, golden: Path, tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text(
        "def four_steps(trace):\n    return len(trace.events) == 4 and trace.events[-1].live\n", encoding="utf-8"
    )
    with StubServer(script=SCRIPT, script_mode="conversation", seed=SEED) as server:
        result = run_cli(
            "fork", golden, "--at", 3, "--runs", 3, "-j", 3, "--runs-dir", tmp_path / "many",
            "--expect", "checks:four_steps", "--expect-exit", 0, "--json", "--", sys.executable, AGENT,
            env=_env(server),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["successes"] == 3
    assert verdict["criterion"] == "exit status 0 and four_steps(trace)"
    assert sum(group["count"] for group in verdict["groups"]) == 3


def test_runs_bad_input(run_cli: RunCli, golden: Path, tmp_path: Path) -> None:
    alone = run_cli("fork", golden, "--at", 3, "--json", "--", sys.executable, AGENT)
    assert alone.returncode == 2 and "--json applies to --runs K; add --runs" in alone.stderr
    both = run_cli(
        "fork", golden, "--at", 3, "--runs", 2, "--save-as", tmp_path / "x.rewind", "--", sys.executable, AGENT
    )
    assert both.returncode == 2 and "with --runs each run is saved in --runs-dir" in both.stderr
    regex = run_cli("fork", golden, "--at", 3, "--runs", 2, "--expect-output", "(", "--", sys.executable, AGENT)
    assert regex.returncode == 2 and "is not a regular expression" in regex.stderr
    missing = run_cli("fork", golden, "--at", 3, "--runs", 2, "--expect", "nowhere:check", "--", sys.executable, AGENT)
    assert missing.returncode == 2 and "--expect=nowhere:check: cannot import it" in missing.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "run-001.rewind").write_text("")
    taken = run_cli(
        "fork", golden, "--at", 3, "--runs", 2, "--runs-dir", tmp_path / "full", "--", sys.executable, AGENT
    )
    assert taken.returncode == 2 and "already holds runs" in taken.stderr
    assert (tmp_path / "full" / "run-001.rewind").read_text() == ""  # nothing lost


def test_replay_fork_at_takes_runs_too(run_cli: RunCli, golden: Path, tmp_path: Path) -> None:
    with StubServer(script=SCRIPT, script_mode="conversation", seed=SEED) as server:
        result = run_cli(
            "replay", golden, "--fork-at", 3, "--runs", 2, "-j", 2, "--json", "--", sys.executable, AGENT,
            env=_env(server),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert sorted(r["final_output"] for r in verdict["results"]) == sorted(_expected_answers(2))
    plain = run_cli("replay", golden, "--runs", 2, "--", sys.executable, AGENT)
    assert plain.returncode == 2 and "--runs needs a live part" in plain.stderr


def test_replay_live_llm_takes_runs_with_the_tools_served(run_cli: RunCli, golden: Path, tmp_path: Path) -> None:
    """A hybrid replay's live part (every model call) run K times: the tools are served in each run."""
    runs = 4
    expected = _expected_answers(runs)
    with StubServer(script=SCRIPT, script_mode="conversation", seed=SEED) as server:
        result = run_cli(
            "replay", golden, "--live", "llm", "--runs", runs, "-j", 2, "--expect-output", "Paris only",
            "--json", "--", sys.executable, AGENT, env=_env(server),
        )  # fmt: skip
        assert server.request_count == 2 * runs  # both model calls of every run went live
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["runs"] == runs and verdict["successes"] == expected.count(ANSWERS[0])
    assert sorted(r["final_output"] for r in verdict["results"]) == sorted(expected)
    for number in range(1, runs + 1):
        trace = Trace.load(tmp_path / "golden.runs" / f"run-{number:03d}.rewind")
        served = [(e.kind, e.live) for e in trace.events]
        assert served == [("llm", True), ("tool", False), ("tool", False), ("llm", True)]

