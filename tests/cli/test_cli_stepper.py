"""``rewind show -i`` in a pipe: the line stepper (n/p/j STEP/q), driven over stdin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rewind_runs import record_trip


@pytest.fixture
def trip(tmp_path: Path) -> Path:
    return record_trip(tmp_path / "trip.rewind", extra_search=True, failing_search=True)


def shown_steps(output: str) -> list[int]:
    return [int(m) for m in re.findall(r"^── step (\d+) ──", output, flags=re.MULTILINE)]


def test_next_previous_jump_quit(run_cli, trip: Path) -> None:
    result = run_cli("show", trip, "-i", input="n\n\nj 4\np\nq\nn\n")
    assert result.returncode == 0, result.stderr
    assert shown_steps(result.stdout) == [0, 1, 2, 4, 3]  # nothing after q
    assert "6 steps · n/Enter next" in result.stdout
    assert "[step 3 · 4/6] n/p/j STEP/q> " in result.stdout
    assert "── step 4 ── tool 'search' · ERROR" in result.stdout
    assert "error:    SearchDown: search backend unavailable" in result.stdout


def test_step_detail_and_full_json(run_cli, trip: Path) -> None:
    result = run_cli("show", trip, "-i", input="n\nf\nq\n")
    out = result.stdout
    assert "── step 1 ── llm 'chat' · ok" in out and "gpt-4o-2024-08-06" in out
    # Requests are stored in canonical form (sorted keys), the form their fingerprint covers.
    assert 'request:  {"messages":[{' in out
    assert '  "model": "gpt-4o"' in out  # f prints the step as indented JSON
    assert "\"role\": \"system\"" in out


def test_end_of_input_quits_cleanly(run_cli, trip: Path) -> None:
    result = run_cli("show", trip, "-i")  # stdin is empty, like a CI job
    assert result.returncode == 0
    assert shown_steps(result.stdout) == [0]


def test_bounds_and_mistakes_are_explained(run_cli, trip: Path) -> None:
    result = run_cli("show", trip, "-i", input="p\nj 99\nj x\nwhat\nj5\n3\nn\nn\nn\nh\nq\n")
    out = result.stdout
    assert result.returncode == 0
    assert "(start of trace)" in out
    assert "no step 99 (steps run 0–5)" in out
    assert "j needs a step number, e.g. j 0" in out
    assert "unknown command 'what'" in out
    assert "(end of trace; p goes back, q quits)" in out
    assert shown_steps(out) == [0, 5, 3, 4, 5]
    assert out.count("n/Enter next · p previous") >= 3


def test_no_tui_forces_the_stepper_and_tui_falls_back_without_a_terminal(run_cli, trip: Path) -> None:
    result = run_cli("show", trip, "-i", "--no-tui", input="q\n")
    assert result.returncode == 0 and shown_steps(result.stdout) == [0]
    # As the spec says: no terminal (a pipe, CI) falls back to the line stepper, with a note.
    for args in (("--tui",), ("-i", "--tui")):
        result = run_cli("show", trip, *args, input="n\nq\n")
        assert result.returncode == 0, result.stderr
        assert result.stderr == (
            "rewind: --tui needs an interactive terminal (stdin and stdout); using the line stepper\n"
        )
        assert shown_steps(result.stdout) == [0, 1]
