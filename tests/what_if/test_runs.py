"""Verdicts over many runs: the Wilson interval, success criteria, outcome groups, ``rewind.runs``."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import what_if_agent

import rewind
from rewind.stub_server import StubServer
from rewind.what_if.runs import RunResult, RunsError, criterion, judge, run_many, wilson_interval


@pytest.mark.parametrize(
    ("successes", "runs", "low", "high"),
    [
        # Published values of the 95% Wilson score interval (Newcombe 1998, Brown-Cai-DasGupta 2001).
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (19, 20, 0.7639, 0.9911),
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_interval_known_values(successes: int, runs: int, low: float, high: float) -> None:
    got = wilson_interval(successes, runs)
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_interval_refuses_nonsense() -> None:
    for successes, runs in ((1, 0), (-1, 3), (4, 3)):
        with pytest.raises(ValueError, match="0 <= successes <= runs"):
            wilson_interval(successes, runs)


def _run(index: int, exit_status: int, output: str) -> RunResult:
    return RunResult(index, None, exit_status, output)


def test_judge_groups_by_exit_status_and_final_line() -> None:
    results = [
        _run(1, 0, "log line\nBooked SFO"),
        _run(2, 0, "other log\nBooked SFO\n"),
        _run(3, 1, "Traceback ...\nRateLimitError"),
        _run(4, 0, "Booked JFK"),
        _run(5, 0, "Booked SFO"),
    ]
    success, described = criterion(expect_output=r"^Booked SFO$")
    verdict = judge(results, success, described=described, source="golden.rewind", folder="runs")
    assert [(g.exit_status, g.final, [r.index for r in g.runs]) for g in verdict.groups] == [
        (0, "Booked SFO", [1, 2, 5]),
        (1, "RateLimitError", [3]),
        (0, "Booked JFK", [4]),
    ]
    assert verdict.successes == 3 and verdict.rate == 0.6
    assert verdict.interval == wilson_interval(3, 5)
    assert verdict.lines()[-1] == (
        "success (output matches /^Booked SFO$/): 3/5 = 60%, 95% interval 23.1%-88.2% (Wilson)"
    )


def test_criteria_combine_and_default_to_exit_zero() -> None:
    success, described = criterion()
    assert described == "exit status 0"
    assert success(_run(1, 0, "")) and not success(_run(2, 3, ""))
    both, described = criterion(expect_exit=0, expect_output="ok")
    assert described == "exit status 0 and output matches /ok/"
    assert both(_run(1, 0, "all ok")) and not both(_run(2, 1, "all ok")) and not both(_run(3, 0, "no"))
    with pytest.raises(RunsError, match="not a regular expression"):
        criterion(expect_output="(")
    with pytest.raises(RunsError, match="must be a function"):
        criterion(expect=42)  # type: ignore[arg-type]


def test_run_many_runs_in_parallel_and_refuses_a_folder_with_runs(tmp_path: Path) -> None:
    seen: list[Path] = []

    def attempt(index: int, trace: Path) -> RunResult:
        seen.append(trace)
        return _run(index, 0, str(index))

    results = run_many(attempt, runs=5, folder=tmp_path / "runs", jobs=3)
    assert [r.index for r in results] == [1, 2, 3, 4, 5]
    assert sorted(p.name for p in seen) == [f"run-00{i}.rewind" for i in range(1, 6)]
    (tmp_path / "runs" / "run-001.rewind").write_text("kept")
    with pytest.raises(RunsError, match="already holds runs"):
        run_many(attempt, runs=1, folder=tmp_path / "runs")
    with pytest.raises(RunsError, match="runs= must be a whole number >= 1"):
        run_many(attempt, runs=0, folder=tmp_path / "other")


@pytest.fixture
def patched_openai() -> Iterator[None]:
    unpatch = rewind.patch_openai()
    yield
    unpatch()


@pytest.mark.usefixtures("patched_openai")
def test_rewind_runs_forks_a_function_and_judges_it(tmp_path: Path) -> None:
    golden = tmp_path / "golden.rewind"
    what_if_agent.record(golden)
    answers = ["Umbrella for Paris only.", "Umbrellas for both."]
    script = [what_if_agent.SCRIPT[0], {"one_of": answers, "weights": [3, 1]}]
    rng = random.Random(2)
    expected = [rng.choices(answers, weights=[3, 1])[0] for _ in range(8)]
    with StubServer(script=script, script_mode="conversation", seed=2) as server:
        oai = what_if_agent.client(server.openai_base_url)
        verdict = rewind.runs(
            golden,
            lambda: what_if_agent.run_agent(oai)["answer"],
            at=3,
            runs=8,
            folder=tmp_path / "runs",
            expect_output="Paris only",
            expect=lambda trace: trace.events[-1].live,
        )
        assert server.request_count == 8  # steps 0-2 served each time: one live call per run
    assert [r.output for r in verdict.runs] == expected
    assert verdict.successes == expected.count(answers[0])
    assert {g.final: len(g.runs) for g in verdict.groups} == {a: expected.count(a) for a in answers}
    assert verdict.to_dict()["interval"]["low"] == wilson_interval(verdict.successes, 8)[0]


def test_one_of_turns_are_checked() -> None:
    from rewind.stub_server._script import parse_turn

    for bad, message in (
        ({"one_of": []}, "non-empty list"),
        ({"one_of": ["a"], "text": "b"}, "only one_of and weights"),
        ({"one_of": ["a", "b"], "weights": [1]}, "list of 2 numbers"),
        ({"one_of": ["a", "b"], "weights": [0, 0]}, "not all 0"),
        ({"one_of": [{"one_of": ["a"]}]}, "cannot nest"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_turn(bad)


def test_a_run_whose_replayed_prefix_diverges_says_so(tmp_path: Path) -> None:
    @rewind.llm(name="ask")
    def ask(question: str) -> dict[str, str]:
        return {"text": question.upper()}

    golden = tmp_path / "golden.rewind"
    with rewind.record(golden):
        ask("first")
        ask("second")
    second = iter(["second", "changed", "second"])
    verdict = rewind.runs(
        golden, lambda: ask("first")["text"] + ask(next(second))["text"], at=2, runs=3, folder=tmp_path / "runs"
    )
    assert [(g.exit_status, [r.index for r in g.runs]) for g in verdict.groups] == [(0, [1, 3]), (1, [2])]
    failed = verdict.groups[1].representative
    assert failed.error is not None and "diverged at step 1" in failed.error
    assert verdict.successes == 2
    assert "rewind: 'rewind: replay diverged at step 1" in verdict.lines()[2]


def test_the_verdict_page_escapes_what_the_runs_printed(tmp_path: Path) -> None:
    from rewind.report.verdict import write_verdict_report

    hostile = "<script>alert(1)</script>"
    results = [_run(1, 0, hostile), _run(2, 1, "ok")]
    success, described = criterion(expect_output="<u>")
    verdict = judge(results, success, described=described, source="<i>.rewind", folder=str(tmp_path))
    page = write_verdict_report(verdict, tmp_path / "verdict.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<u>" not in page and "<i>.rewind" not in page
    assert "0/2 = 0%" in page and "Wilson" in page


def test_a_divergence_the_agent_swallowed_still_fails_the_run(tmp_path: Path) -> None:
    @rewind.llm(name="ask")
    def ask(question: str) -> dict[str, str]:
        return {"text": question.upper()}

    golden = tmp_path / "golden.rewind"
    with rewind.record(golden):
        ask("first")

    def careless() -> str:
        try:
            return ask("other")["text"]
        except rewind.DivergenceError:
            return "carried on"

    with pytest.warns(rewind.UnconsumedEventsWarning, match="1 recorded step never served"):
        verdict = rewind.runs(golden, careless, at=1, runs=1, folder=tmp_path / "runs")
    (run,) = verdict.runs
    assert (run.exit_status, run.output, verdict.successes) == (1, "carried on", 0)
    assert run.error is not None and "diverged at step 0" in run.error
