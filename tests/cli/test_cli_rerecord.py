"""``rewind record`` over an existing trace never loses it to a failed run; summaries name failed steps."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rewind

RunCli = Callable[..., Any]

# Three steps when all goes well; FAIL=1 makes the tool raise and the program crash on it,
# CATCH=1 makes it catch the error and carry on.
AGENT = """
import os, sys
import rewind

@rewind.llm
def model(**request):
    return {"answer": "plan for " + request["q"]}

@rewind.tool
def lookup(key):
    if os.environ.get("FAIL"):
        raise TimeoutError("the flight API timed out")
    return {"key": key}

print(model(q="trip")["answer"])
try:
    print(lookup("LIS"))
except TimeoutError:
    if not os.environ.get("CATCH"):
        raise
    print("gave up on lookup")
print(model(q="answer")["answer"])
"""


def _agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


def test_a_failed_rerecording_keeps_the_good_trace(run_cli: RunCli, tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    good = run_cli("record", "run.rewind", "--", sys.executable, agent)
    assert good.returncode == 0, good.stderr
    assert good.stderr == "rewind: recorded 3 steps to run.rewind\n"
    before = (tmp_path / "run.rewind").read_bytes()

    failed = run_cli("record", "run.rewind", "--", sys.executable, agent, env={"FAIL": "1"})
    assert failed.returncode == 1  # the program's own status
    assert "TimeoutError: the flight API timed out" in failed.stderr  # its traceback
    assert failed.stderr.splitlines()[-1] == (
        "rewind: the program failed (exit status 1), so run.rewind keeps its previous recording; this run's "
        "2 steps (1 failed: step 1 (tool lookup: TimeoutError)) went to run.failed.rewind. "
        "Pass --force to replace run.rewind anyway"
    )
    assert (tmp_path / "run.rewind").read_bytes() == before  # untouched
    kept = rewind.Trace.load(tmp_path / "run.failed.rewind")
    assert [e.ok for e in kept.events] == [True, False]
    assert not list(tmp_path.glob("*.recording-*"))  # no scratch file left behind


def test_force_replaces_it_anyway(run_cli: RunCli, tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    assert run_cli("record", "run.rewind", "--", sys.executable, agent).returncode == 0
    forced = run_cli("record", "run.rewind", "--force", "--", sys.executable, agent, env={"FAIL": "1"})
    assert forced.returncode == 1
    assert forced.stderr.splitlines()[-1] == (
        "rewind: recorded 2 steps to run.rewind; 1 failed: step 1 (tool lookup: TimeoutError)"
    )
    assert len(rewind.Trace.load(tmp_path / "run.rewind").events) == 2
    assert not (tmp_path / "run.failed.rewind").exists()


def test_a_successful_rerecording_replaces_it_and_names_failed_steps(run_cli: RunCli, tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    assert run_cli("record", "run.rewind", "--", sys.executable, agent).returncode == 0
    # The program caught the error and finished: a good run whose step 1 failed.
    caught = run_cli("record", "run.rewind", "--", sys.executable, agent, env={"FAIL": "1", "CATCH": "1"})
    assert caught.returncode == 0, caught.stderr
    assert caught.stderr == "rewind: recorded 3 steps to run.rewind; 1 failed: step 1 (tool lookup: TimeoutError)\n"
    assert [e.ok for e in rewind.Trace.load(tmp_path / "run.rewind").events] == [True, False, True]


def test_a_first_recording_of_a_failing_run_is_kept_where_asked(run_cli: RunCli, tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    result = run_cli("record", "new.rewind", "--", sys.executable, agent, env={"FAIL": "1"})
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "rewind: recorded 2 steps to new.rewind; 1 failed: step 1 (tool lookup: TimeoutError)"
    )
    assert len(rewind.Trace.load(tmp_path / "new.rewind").events) == 2
