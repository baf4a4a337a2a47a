"""Sessions from ``REWIND_*`` variables: parsing in-process, start-up and exit in real processes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.setup.bootstrap import EnvironmentConfigError, session_from_environment

# A decorator-based agent: fast to start, no SDK needed. QUESTION picks the request.
AGENT = """
import json, os, sys
import rewind

@rewind.llm
def model(**request):
    return {"answer": "echo " + request["q"]}

@rewind.tool
def lookup(key):
    return {"key": key, "value": 42}

def attempt(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except rewind.DivergenceError:
        return "swallowed a divergence"

for q in os.environ.get("QUESTIONS", "hi,there").split(","):
    print(attempt(lambda: model(q=q)["answer"]))
if not os.environ.get("SKIP_LOOKUP"):
    print(attempt(lambda: lookup("k")["value"]))
if os.environ.get("SPAWN"):
    import subprocess
    code = "import rewind.bootstrap as b; s = b.start_from_environment(); print('subprocess session:', s and s.path)"
    subprocess.run([sys.executable, "-c", code])
    own = {**os.environ, "REWIND_RECORD": os.environ["SPAWN"], "REWIND_STATUS_FILE": ""}
    subprocess.run([sys.executable, "-c", code], env=own)
"""

RunPython = Callable[..., Any]


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "run.rewind"
    with rewind.record(path):
        pass
    return path


# -- parsing --------------------------------------------------------------------------


def test_nothing_set_means_no_session() -> None:
    assert session_from_environment({}) is None
    assert session_from_environment({"REWIND_MATCH": "parallel"}) is None  # nothing to match against


def test_record_options(tmp_path: Path) -> None:
    session = session_from_environment(
        {"REWIND_RECORD": str(tmp_path / "r.rewind"), "REWIND_META": '{"ticket": "T-1"}', "REWIND_EXTERNALIZE": "64"}
    )
    assert session is not None and session.mode == "record"
    with session:
        pass
    trace = rewind.Trace.load(tmp_path / "r.rewind")
    assert trace.meta == {"ticket": "T-1"}


def test_replay_and_fork_options(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    session = session_from_environment(
        {"REWIND_REPLAY": str(path), "REWIND_MATCH": "parallel", "REWIND_REQUIRE_FULL_CONSUMPTION": "yes"}
    )
    assert session is not None and session.mode == "replay" and session.require_full_consumption
    with session:
        assert type(session.matcher).__name__ == "ParallelMatcher"
    forked = session_from_environment(
        {"REWIND_REPLAY": str(path), "REWIND_FORK_AT": "0", "REWIND_SAVE_AS": str(tmp_path / "f.rewind")}
    )
    assert forked is not None and forked.mode == "fork"
    with forked:
        pass
    assert rewind.Trace.load(tmp_path / "f.rewind").header["forked_from"]["at"] == 0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"REWIND_RECORD": "a", "REWIND_REPLAY": "b"}, "not both"),
        ({"REWIND_RECORD": "a", "REWIND_META": "{nope"}, "REWIND_META must be a JSON object"),
        ({"REWIND_RECORD": "a", "REWIND_META": "[1]"}, "REWIND_META must be a JSON object"),
        ({"REWIND_RECORD": "a", "REWIND_EXTERNALIZE": "0"}, "REWIND_EXTERNALIZE must be a whole number >= 1"),
        ({"REWIND_RECORD": "a", "REWIND_FORK_AT": "1"}, "REWIND_FORK_AT applies to REWIND_REPLAY"),
        ({"REWIND_FORK_AT": "1"}, "REWIND_FORK_AT needs REWIND_REPLAY"),
        ({"REWIND_REPLAY": "a", "REWIND_FORK_AT": "two"}, "REWIND_FORK_AT must be a whole number >= 0, not 'two'"),
        ({"REWIND_REPLAY": "a", "REWIND_BREAK_AT": "-1"}, "REWIND_BREAK_AT must be a whole number"),
        ({"REWIND_REPLAY": "a", "REWIND_SAVE_AS": "b"}, "REWIND_SAVE_AS needs REWIND_FORK_AT"),
        ({"REWIND_REPLAY": "a", "REWIND_MATCH": "psychic"}, "REWIND_MATCH: unknown match strategy 'psychic'"),
        ({"REWIND_REPLAY": "a", "REWIND_REQUIRE_FULL_CONSUMPTION": "maybe"}, "must be 1 or 0"),
        (
            {"REWIND_REPLAY": "a", "REWIND_FORK_AT": "1", "REWIND_REQUIRE_FULL_CONSUMPTION": "1"},
            "applies to a plain replay",
        ),
        ({"REWIND_REPLAY": "a", "REWIND_REDACT": "no_colon"}, "REWIND_REDACT must be module:function"),
        ({"REWIND_REPLAY": "a", "REWIND_NORMALIZE": "no_such_module_x:f"}, "REWIND_NORMALIZE=no_such_module_x:f"),
        ({"REWIND_REPLAY": "a", "REWIND_NORMALIZE": "json:nope"}, "cannot import it"),
        ({"REWIND_REPLAY": "a", "REWIND_NORMALIZE": "json:__name__"}, "is a str, not a function"),
        # Checked while parsing, by the validators replay()/fork() use: the variable is known.
        ({"REWIND_REPLAY": "a", "REWIND_NETWORK": "offline"}, "REWIND_NETWORK: network= must be 'block' or 'allow'"),
        ({"REWIND_REPLAY": "a", "REWIND_ON_MISSING": "maybe"}, "REWIND_ON_MISSING: on_missing= must be one of"),
        ({"REWIND_REPLAY": "a", "REWIND_LIVE": "llm", "REWIND_MATCH": "strict"}, "REWIND_MATCH: a hybrid replay"),
        ({"REWIND_REPLAY": "a", "REWIND_FORK_AT": "1", "REWIND_LIVE": "llm"}, "REWIND_LIVE: REWIND_FORK_AT runs"),
        (
            {"REWIND_REPLAY": "a", "REWIND_FORK_AT": "1", "REWIND_EDIT": "e.json", "REWIND_THEN": "later"},
            "REWIND_THEN: must be one of 'live', 'replay'",
        ),
        (
            {"REWIND_REPLAY": "a", "REWIND_FORK_AT": "1", "REWIND_EDIT": "e.json", "REWIND_MATCH": "parallel"},
            "REWIND_MATCH: REWIND_EDIT needs match='strict' or 'ordered'",
        ),
        (
            {"REWIND_REPLAY": "a", "REWIND_REFRESH": "1", "REWIND_SAVE_AS": "b", "REWIND_MATCH": "fuzzy"},
            "REWIND_MATCH: a refresh needs match='strict' or 'ordered'",
        ),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(EnvironmentConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        session_from_environment(env)


def test_redact_and_normalize_are_imported_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "scrubbers_for_test.py").write_text(
        "def scrub(p):\n    return {k: ('***' if k == 'secret' else v) for k, v in p.items()} if isinstance(p, dict) "
        "else p\n\ndef drop_ts(p):\n    p.pop('ts', None)\n    return p\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "scrubbers_for_test", raising=False)
    path = tmp_path / "r.rewind"
    session = session_from_environment(
        {
            "REWIND_RECORD": str(path),
            "REWIND_REDACT": "scrubbers_for_test:scrub",
            "REWIND_NORMALIZE": "scrubbers_for_test:drop_ts",
        }
    )
    assert session is not None
    assert str(tmp_path) not in sys.path  # only searched while importing

    @rewind.tool
    def login(secret: str, ts: int) -> str:
        return "ok"

    with session:
        login("hunter2", ts=1)
    with rewind.replay(path, normalize=sys.modules["scrubbers_for_test"].drop_ts):
        assert login("hunter2", ts=2) == "ok"  # the timestamp is not part of the identity
    assert "hunter2" not in path.read_text()


# -- real processes -------------------------------------------------------------------


def _start_code(hook: str = "start_from_environment") -> str:
    return f"import rewind.bootstrap as b; b.{hook}()\n" + AGENT


def test_record_then_replay_in_fresh_processes(tmp_path: Path, run_python: RunPython) -> None:
    path, status, own = tmp_path / "run.rewind", tmp_path / "status.json", tmp_path / "own.rewind"
    env = {
        "REWIND_RECORD": str(path),
        "REWIND_STATUS_FILE": str(status),
        "REWIND_META": '{"sha": "abc"}',
        "SPAWN": str(own),
    }
    result = run_python(_start_code(), env=env)
    assert result.returncode == 0, result.stderr
    # The process owns the session: a Python subprocess of the agent does not record over the file.
    assert "subprocess session: None" in result.stdout
    # One given a session of its own (another trace) is not held back.
    assert f"subprocess session: {own}" in result.stdout
    assert json.loads(status.read_text()) == {
        "mode": "record",
        "path": str(path),
        "served": 0,
        "recorded": 3,
        "failed": [],
        "error": None,
    }
    assert rewind.Trace.load(path).meta == {"sha": "abc"}

    result = run_python(_start_code(), env={"REWIND_REPLAY": str(path), "REWIND_STATUS_FILE": str(status)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["echo hi", "echo there", "42"]
    assert json.loads(status.read_text())["error"] is None
    assert json.loads(status.read_text())["served"] == 3


def test_a_swallowed_divergence_is_in_the_status_file(tmp_path: Path, run_python: RunPython) -> None:
    path, status = tmp_path / "run.rewind", tmp_path / "status.json"
    assert run_python(_start_code(), env={"REWIND_RECORD": str(path)}).returncode == 0
    env = {"REWIND_REPLAY": str(path), "REWIND_STATUS_FILE": str(status), "QUESTIONS": "hi,changed"}
    result = run_python(_start_code(), env=env)
    assert result.returncode == 0, result.stderr  # the agent caught it ...
    assert "swallowed a divergence" in result.stdout
    report = json.loads(status.read_text())  # ... but the session knows
    assert report["divergence"] == {"step": 1, "reason": report["divergence"]["reason"]}
    assert report["error"].startswith("rewind: replay diverged at step 1")
    assert "UnconsumedEventsWarning" not in result.stderr  # the divergence is the cause worth reporting


def test_without_a_status_file_failures_go_to_stderr(tmp_path: Path, run_python: RunPython) -> None:
    path = tmp_path / "run.rewind"
    assert run_python(_start_code(), env={"REWIND_RECORD": str(path)}).returncode == 0
    result = run_python(_start_code(), env={"REWIND_REPLAY": str(path), "SKIP_LOOKUP": "1"})
    assert result.returncode == 0
    # Unserved steps at exit: one plain line, not a warning pointing into rewind's source.
    assert result.stderr.strip().splitlines() == [
        f"rewind: replay of {path} ended with 1 recorded step never served (step 2); "
        "the run ended earlier than the recording or skipped steps.",
        f"rewind: replayed 2 of 3 recorded steps from {path}; code rewind does not intercept "
        "(undecorated tools, other clients) ran live",
    ]
    env = {"REWIND_REPLAY": str(path), "SKIP_LOOKUP": "1", "REWIND_REQUIRE_FULL_CONSUMPTION": "1"}
    result = run_python(_start_code(), env=env)
    assert "REWIND_REQUIRE_FULL_CONSUMPTION=1 makes this a failure" in result.stderr  # the variable's words


def test_post_instrument_hook_fails_closed(tmp_path: Path, run_python: RunPython) -> None:
    # opentelemetry-instrument would log and swallow the error, and the "replay" would go live.
    result = run_python(_start_code("post_instrument"), env={"REWIND_REPLAY": str(tmp_path / "missing.rewind")})
    assert result.returncode == 2
    assert result.stdout == ""  # the agent never ran
    assert result.stderr.splitlines() == [
        f"rewind: cannot start the session: {tmp_path / 'missing.rewind'}: no such trace file; "
        "record one with rewind.record(path)"
    ]


def test_starting_twice_is_harmless(tmp_path: Path, run_python: RunPython) -> None:
    code = (
        "import rewind.bootstrap as b\n"
        "first = b.start_from_environment(); second = b.autostart()\n"
        "assert first is second is b.environment_session() and first is not None\n"
        "import rewind; assert rewind.current_session() is first\n"
    )
    result = run_python(code, env={"REWIND_RECORD": str(tmp_path / "r.rewind")})
    assert result.returncode == 0, result.stderr


def test_a_divergence_that_ended_the_program_is_reported_once(tmp_path: Path, run_python: RunPython) -> None:
    path = tmp_path / "run.rewind"
    code = "import os, rewind.bootstrap as b; b.start_from_environment()\nimport rewind\n"
    code += "rewind.tool(lambda x: x, name='t')(int(os.environ['X']))\n"
    assert run_python(code, env={"REWIND_RECORD": str(path), "X": "1"}).returncode == 0
    result = run_python(code, env={"REWIND_REPLAY": str(path), "X": "2"})
    assert result.returncode == 1
    assert result.stderr.count("rewind: replay diverged at step 0") == 1  # in the traceback only
    status = tmp_path / "status.json"
    run_python(code, env={"REWIND_REPLAY": str(path), "X": "2", "REWIND_STATUS_FILE": str(status)})
    assert json.loads(status.read_text())["divergence"]["step"] == 0
