"""``rewind record|replay TRACE -- CMD`` over the installed script and real child processes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.stub_server import StubServer

RunCli = Callable[..., Any]

# An unmodified-looking decorator agent (no SDK, quick to start). Environment knobs pick
# its inputs and how it ends.
AGENT = """
import asyncio, os, subprocess, sys
import rewind

@rewind.llm
def model(**request):
    return {"answer": "echo " + request["q"]}

@rewind.tool
async def lookup(key):
    await asyncio.sleep(0.01 * (3 - int(key)))  # finishes in reverse order of start
    return {"key": key}

def attempt(fn):
    try:
        return fn()
    except rewind.DivergenceError:
        return "swallowed"

for q in os.environ.get("QUESTIONS", "hi,there").split(","):
    print(attempt(lambda: model(q=q)["answer"]))
if os.environ.get("PARALLEL"):
    async def main():
        keys = os.environ.get("ORDER", "0,1,2").split(",")
        return sorted((await asyncio.gather(*(lookup(k) for k in keys))), key=str)
    print(attempt(lambda: asyncio.run(main())))
if os.environ.get("SPAWN"):
    # A Python subprocess of the program: it must not open a second session on the file.
    subprocess.run([sys.executable, "-c", "import rewind; print('grandchild session:', rewind.current_session())"])
sys.exit(int(os.environ.get("EXIT", "0")))
"""


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


def _record(run_cli: RunCli, agent: Path, trace: str = "run.rewind", **env: str) -> Any:
    return run_cli("record", trace, "--", sys.executable, agent, env=env)


def test_record_then_replay_offline(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    result = run_cli("record", "run.rewind", "--meta", '{"ticket": "T-1"}', "--", sys.executable, agent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["echo hi", "echo there"]
    assert result.stderr.splitlines() == ["rewind: recorded 2 steps to run.rewind"]
    trace = rewind.Trace.load(tmp_path / "run.rewind")
    assert [e.name for e in trace.events] == ["model", "model"]
    assert trace.meta == {"ticket": "T-1"}

    result = run_cli("replay", "run.rewind", "--", sys.executable, agent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["echo hi", "echo there"]
    assert result.stderr.splitlines() == ["rewind: replayed 2 of 2 recorded steps from run.rewind offline"]
    assert run_cli("replay", "-q", "run.rewind", "--", sys.executable, agent).stderr == ""


def test_the_childs_exit_status_is_kept(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    result = _record(run_cli, agent, EXIT="3")
    assert result.returncode == 3
    assert len(rewind.Trace.load(tmp_path / "run.rewind").events) == 2  # recorded all the same
    assert run_cli("replay", "run.rewind", "--", sys.executable, agent, env={"EXIT": "4"}).returncode == 4
    killed = run_cli("replay", "run.rewind", "--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 15)")
    assert killed.returncode == 128 + 15


def test_a_swallowed_divergence_fails_the_replay(run_cli: RunCli, agent: Path) -> None:
    assert _record(run_cli, agent).returncode == 0
    result = run_cli("replay", "run.rewind", "--", sys.executable, agent, env={"QUESTIONS": "hi,changed"})
    assert result.stdout.splitlines() == ["echo hi", "swallowed"]
    assert result.returncode == 1
    assert result.stderr.startswith("rewind: replay diverged at step 1: prompt/content drift\n")
    assert '-  "q": "there"' in result.stderr and '+  "q": "changed"' in result.stderr
    # Uncaught, it is the child's own failure: its status stands and the message is still there.
    crash = run_cli("replay", "run.rewind", "--", sys.executable, "-c", "import rewind\nrewind.llm(lambda **r: 1)(q=0)")
    assert crash.returncode == 1
    assert "DivergenceError" in crash.stderr and "rewind: replay diverged at step 0" in crash.stderr


def test_require_full_consumption(run_cli: RunCli, agent: Path) -> None:
    assert _record(run_cli, agent).returncode == 0
    short = {"QUESTIONS": "hi"}
    lenient = run_cli("replay", "run.rewind", "--", sys.executable, agent, env=short)
    assert lenient.returncode == 0
    assert "ended with 1 recorded step never served (step 1)" in lenient.stderr
    strict = run_cli("replay", "run.rewind", "--require-full-consumption", "--", sys.executable, agent, env=short)
    assert strict.returncode == 1
    assert "--require-full-consumption makes this a failure" in strict.stderr  # the option the user typed


def test_match_parallel_serves_concurrent_calls_by_identity(run_cli: RunCli, agent: Path) -> None:
    assert _record(run_cli, agent, PARALLEL="1").returncode == 0
    # The concurrent calls start in another order this time: strict calls that drift.
    env = {"PARALLEL": "1", "ORDER": "2,0,1"}
    strict = run_cli("replay", "run.rewind", "--", sys.executable, agent, env=env)
    assert "swallowed" in strict.stdout and strict.returncode == 1
    parallel = run_cli("replay", "run.rewind", "--match", "parallel", "--", sys.executable, agent, env=env)
    assert parallel.returncode == 0, parallel.stderr
    assert "[{'key': '0'}, {'key': '1'}, {'key': '2'}]" in parallel.stdout


def test_fork_at_with_save_as(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    assert _record(run_cli, agent).returncode == 0
    env = {"QUESTIONS": "hi,new question"}
    result = run_cli(
        "replay", "run.rewind", "--fork-at", "1", "--save-as", "fixed.rewind", "--", sys.executable, agent, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["echo hi", "echo new question"]
    assert result.stderr.splitlines() == [
        "rewind: forked run.rewind at step 1: 1 step replayed, 1 live, saved to fixed.rewind"
    ]
    forked = rewind.Trace.load(tmp_path / "fixed.rewind")
    assert [e.request["q"] for e in forked.events] == ["hi", "new question"]
    assert forked.header["forked_from"]["at"] == 1


def test_break_at_pauses_in_the_debugger_hook(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    assert _record(run_cli, agent).returncode == 0
    (tmp_path / "pause_hook.py").write_text("def hook(*a, **k):\n    print('paused at a breakpoint')\n")
    env = {"PYTHONBREAKPOINT": "pause_hook.hook", "PYTHONPATH": str(tmp_path)}
    result = run_cli("replay", "run.rewind", "--break-at", "1", "--", sys.executable, agent, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["echo hi", "paused at a breakpoint", "echo there"]


def test_redact_and_normalize_from_the_working_directory(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text(
        "def scrub(p):\n    return {**p, 'token': '***'} if isinstance(p, dict) and 'token' in p else p\n"
        "def no_ts(p):\n    p.pop('ts', None)\n    return p\n"
    )
    program = (
        "import sys, time, rewind\n"
        "t = rewind.tool(lambda token, ts: 'ok', name='login')\n"
        "print(t(token='s3cret', ts=time.time_ns()))\n"
    )
    hooks = ("--redact", "hooks:scrub", "--normalize", "hooks:no_ts")
    assert run_cli("record", "run.rewind", *hooks, "--", sys.executable, "-c", program).returncode == 0
    assert "s3cret" not in (tmp_path / "run.rewind").read_text()
    result = run_cli("replay", "run.rewind", "--normalize", "hooks:no_ts", "--", sys.executable, "-c", program)
    assert result.returncode == 0, result.stderr
    missing = run_cli("record", "x.rewind", "--redact", "nowhere:f", "--", sys.executable, "-c", "pass")
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[0].startswith("rewind: cannot start the session: REWIND_REDACT=nowhere:f")


def test_only_the_first_python_process_holds_the_session(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    result = _record(run_cli, agent, SPAWN="1")
    assert result.returncode == 0, result.stderr
    assert "grandchild session: None" in result.stdout
    assert len(rewind.Trace.load(tmp_path / "run.rewind").events) == 2


def test_a_command_that_never_opens_a_session_is_an_error(run_cli: RunCli) -> None:
    result = run_cli("record", "run.rewind", "--", "true")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "rewind: error: the command finished without opening a rewind session; run a Python program "
        "(python agent.py) whose interpreter has agent-rewind-otel installed"
    ]
    assert run_cli("record", "run.rewind", "--", "false").returncode == 1  # the child's own status


def test_stale_session_variables_in_the_environment_are_ignored(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    stale = {"REWIND_REPLAY": str(tmp_path / "other.rewind"), "REWIND_MATCH": "psychic"}
    assert _record(run_cli, agent, **stale).returncode == 0
    assert (tmp_path / "run.rewind").exists()


def test_a_real_openai_agent_records_and_replays_with_the_server_gone(run_cli: RunCli, tmp_path: Path) -> None:
    program = (
        "import openai\n"
        "client = openai.OpenAI(max_retries=0)\n"
        "r = client.chat.completions.create(model='gpt-4o-mini', messages=[{'role': 'user', 'content': 'hello'}])\n"
        "print(r.choices[0].message.content)\n"
    )
    server = StubServer().start()
    env = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-never-recorded"}
    try:
        recorded = run_cli("record", "run.rewind", "--", sys.executable, "-c", program, env=env)
    finally:
        server.stop()
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "Echo: hello\n"
    assert "sk-never-recorded" not in (tmp_path / "run.rewind").read_text()
    replayed = run_cli("replay", "run.rewind", "--", sys.executable, "-c", program, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "Echo: hello\n"


# -- bad input: one line, exit 2, nothing run -----------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["replay", "missing.rewind", "--", "python", "-c", "pass"], ["missing.rewind: no such trace file"]),
        (["replay", "corrupt.rewind", "--", "python", "-c", "pass"], ["corrupt.rewind", "not a rewind trace"]),
        (["replay", "run.rewind"], ["no command to run", "rewind record run.rewind -- python agent.py"]),
        (["record", "run.rewind"], ["no command to run"]),
        (["replay", "run.rewind", "--", "no-such-command-x"], ["no-such-command-x: command not found"]),
        (["replay", "run.rewind", "--save-as", "b.rewind", "--", "true"], ["--save-as needs --fork-at"]),
        (["replay", "run.rewind", "--fork-at", "9", "--", "true"], ["--fork-at 9 is past the end", "1 steps"]),
        (["replay", "run.rewind", "--break-at", "5", "--", "true"], ["--break-at 5", "has no step 5"]),
        (
            ["replay", "run.rewind", "--fork-at", "0", "--require-full-consumption", "--", "true"],
            ["--require-full-consumption applies to a plain replay"],
        ),
        (["replay", "run.rewind", "--fork-at", "0", "--save-as", "run.rewind", "--", "true"], ["is the trace being"]),
        (["replay", "run.rewind", "--redact", "nocolon", "--", "true"], ["--redact takes module:function"]),
        (["record", "x.rewind", "--meta", "{bad", "--", "true"], ["--meta must be a JSON object"]),
        (["record", "x.rewind", "--meta", "[1]", "--", "true"], ["--meta must be a JSON object", "not list"]),
        (["record", "nowhere/x.rewind", "--", "true"], ["nowhere/x.rewind", "does not exist"]),
        (["record", ".", "--", "true"], ["is a directory"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    run_cli: RunCli, input_error: Callable[..., str], tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    with rewind.record(tmp_path / "run.rewind"):
        rewind.tool(lambda: 1, name="t")()
    (tmp_path / "corrupt.rewind").write_text("this is not json\n")
    input_error(run_cli(*args), *fragments)


def test_unknown_match_strategy_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("replay", "run.rewind", "--match", "psychic", "--", "true")
    assert result.returncode == 2
    assert "'psychic' is not one of 'strict', 'ordered', 'fuzzy', 'parallel'" in result.stderr


def test_help_lists_both_commands(run_cli: RunCli) -> None:
    listing = run_cli("--help").stdout
    assert "record" in listing and "replay" in listing
    assert "--fork-at STEP" in run_cli("replay", "--help").stdout
    status_help = json.dumps(run_cli("record", "--help").stdout)
    assert "Exit status" in status_help


def test_any_file_name_works(run_cli: RunCli, agent: Path, tmp_path: Path) -> None:
    result = run_cli("record", "run {1}.rewind", "--", sys.executable, agent)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "rewind: recorded 2 steps to run {1}.rewind\n"
