"""``on_step`` and ``break_at``: stopping an agent mid-flight at a recorded step.

``break_at`` goes through ``sys.breakpointhook``, so ``PYTHONBREAKPOINT`` picks the
debugger and ``PYTHONBREAKPOINT=0`` disables the pause. pytest installs its own
hook, so the in-process tests put the standard one back first.
"""

from __future__ import annotations

import contextvars
import os
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.storage.trace import Event

REPO = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds; only a guard against hanging, never a timing assertion


@rewind.llm
def plan(goal: str) -> str:
    return f"plan for {goal}"


@rewind.tool
def act(step: str) -> str:
    if step == "fail":
        raise RuntimeError("the tool broke")
    return f"did {step}"


def agent_turn(goal: str) -> list[str]:
    the_plan = plan(goal)
    done = [act("search"), act("book")]
    return [the_plan, *done]


@pytest.fixture
def recorded(trace_path: Path) -> Path:
    with rewind.record(trace_path):
        agent_turn("a trip")
    return trace_path


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A module the standard breakpoint hook imports by name from ``PYTHONBREAKPOINT``."""
    module = types.ModuleType("rewind_breakpoint_probe")
    module.calls = []  # type: ignore[attr-defined]

    def hook(*args: Any, **kwargs: Any) -> None:
        frames = []
        frame = sys._getframe(1)
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back  # type: ignore[assignment]
        session = rewind.current_session()
        module.calls.append(  # type: ignore[attr-defined]
            {"cursor": session.cursor if session else None, "frames": [f.f_code.co_name for f in frames],
             "agent_locals": next((dict(f.f_locals) for f in frames if f.f_code.co_name == "agent_turn"), None)}
        )

    module.hook = hook  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rewind_breakpoint_probe", module)
    monkeypatch.setattr(sys, "breakpointhook", sys.__breakpointhook__)
    monkeypatch.setenv("PYTHONBREAKPOINT", "rewind_breakpoint_probe.hook")
    return module  # type: ignore[return-value]


def test_on_step_fires_with_each_served_event_including_recorded_errors(trace_path: Path) -> None:
    with rewind.record(trace_path), pytest.raises(RuntimeError):
        plan("x")
        act("fail")
    seen: list[Event] = []
    with rewind.replay(trace_path, on_step=seen.append), pytest.raises(RuntimeError, match="the tool broke"):
        plan("x")
        act("fail")
    assert [(e.seq, e.kind, e.name, e.ok) for e in seen] == [(0, "llm", "plan", True), (1, "tool", "act", False)]
    assert seen[0].request == {"goal": "x"} and seen[0].response == "plan for x"


def test_break_at_pauses_in_the_hook_named_by_pythonbreakpoint(recorded: Path, probe: Any) -> None:
    with rewind.replay(recorded, break_at=1):
        assert agent_turn("a trip") == ["plan for a trip", "did search", "did book"]
    assert len(probe.calls) == 1
    call = probe.calls[0]
    assert call["cursor"] == 2  # paused as step 1 is handed to the agent
    # The agent's real frames are on the stack, its state inspectable.
    assert "agent_turn" in call["frames"] and call["agent_locals"]["the_plan"] == "plan for a trip"


def test_pythonbreakpoint_0_disables_the_pause(recorded: Path, probe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    with rewind.replay(recorded, break_at=0) as session:
        agent_turn("a trip")
    assert probe.calls == [] and session.cursor == 3


def test_break_at_a_step_never_served_never_pauses(recorded: Path, probe: Any) -> None:
    with pytest.warns(rewind.UnconsumedEventsWarning), rewind.replay(recorded, break_at=2):
        plan("a trip")
    assert probe.calls == []


def test_break_at_must_be_a_step_number(recorded: Path) -> None:
    for bad in (-1, "2", 1.0, True):
        with pytest.raises(ValueError, match="break_at"):
            rewind.replay(recorded, break_at=bad)  # type: ignore[arg-type]


def test_other_threads_are_served_while_one_thread_sits_in_the_breakpoint(
    trace_path: Path, probe: Any
) -> None:
    with rewind.record(trace_path):
        act("pause here")
        for name in ("one", "two", "three"):
            act(name)
    paused = threading.Event()
    others_done = threading.Event()
    outcome: dict[str, Any] = {}

    def hook(*args: Any, **kwargs: Any) -> None:
        paused.set()
        # Holding the pause until the other thread got all its answers proves the
        # session lock is not held here.
        outcome["others_finished_while_paused"] = others_done.wait(WAIT)

    probe.hook = hook

    def pausing() -> None:
        outcome["paused_thread"] = act("pause here")

    def others() -> None:
        outcome["others"] = [act(name) for name in ("one", "two", "three")]
        others_done.set()

    with rewind.replay(trace_path, match="parallel", break_at=0, require_full_consumption=True):
        first = threading.Thread(target=contextvars.copy_context().run, args=(pausing,))
        first.start()
        assert paused.wait(WAIT), "the breakpoint was never reached"
        second = threading.Thread(target=contextvars.copy_context().run, args=(others,))
        second.start()
        second.join(WAIT)
        first.join(WAIT)
    assert outcome == {
        "others_finished_while_paused": True,
        "others": ["did one", "did two", "did three"],
        "paused_thread": "did pause here",
    }


AGENT = """
import rewind

@rewind.tool
def act(step):
    return "did " + step

with rewind.record("run.rewind"):
    for name in ("a", "b", "c"):
        act(name)

with rewind.replay("run.rewind", break_at=1, on_step=lambda e: print("served", e.seq, flush=True)):
    for name in ("a", "b", "c"):
        act(name)
print("finished", flush=True)
"""

PROBE = """
import rewind

def hook(*args, **kwargs):
    print("paused at cursor", rewind.current_session().cursor, flush=True)
"""


def _run(tmp_path: Path, pythonbreakpoint: str | None) -> str:
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT))
    (tmp_path / "probe.py").write_text(textwrap.dedent(PROBE))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_", "PYTHONBREAKPOINT"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO)])
    if pythonbreakpoint is not None:
        env["PYTHONBREAKPOINT"] = pythonbreakpoint
    result = subprocess.run(
        [sys.executable, "agent.py"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_real_process_honours_pythonbreakpoint(tmp_path: Path) -> None:
    assert _run(tmp_path, "probe.hook").splitlines() == [
        "served 0",
        "served 1",
        "paused at cursor 2",
        "served 2",
        "finished",
    ]
    assert _run(tmp_path, "0").splitlines() == ["served 0", "served 1", "served 2", "finished"]


PDB_AGENT = """
import rewind

@rewind.llm
def plan(goal):
    return "plan for " + goal

@rewind.tool
def act(step):
    return "did " + step

def agent_turn(goal):
    the_plan = plan(goal)
    done = act("search")
    return the_plan, done

with rewind.record("run.rewind"):
    agent_turn("a trip")
with rewind.replay("run.rewind", break_at=1):
    print("result:", agent_turn("a trip"), flush=True)
"""


def test_the_standard_debugger_stops_in_the_agents_frame(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(PDB_AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_", "PYTHONBREAKPOINT"))}
    result = subprocess.run(
        [sys.executable, "agent.py"],
        cwd=tmp_path,
        env=env,
        input="p the_plan, done\nc\n",  # what a user types at the (Pdb) prompt
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # Said which step was served, and where the agent is ...
    assert "rewind: break_at=1: step 1 (tool 'act') was just served from run.rewind; pausing in " in result.stderr
    assert "agent.py:14 in agent_turn()" in result.stderr
    # ... and pdb stopped there: in agent_turn, on the line after the call, the served value assigned.
    # Before: pdb opened in rewind/session.py, three frames below the agent.
    assert "agent.py(15)agent_turn()" in result.stdout
    assert "rewind/" not in result.stdout.split("(Pdb)")[0]
    assert "('plan for a trip', 'did search')" in result.stdout
    assert "result: ('plan for a trip', 'did search')" in result.stdout
