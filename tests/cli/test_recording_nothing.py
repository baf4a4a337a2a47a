"""A recording that holds nothing says why (issue 35), as a new user meets it.

``rewind record run.rewind -- python -c "print(1)"`` said "recorded 0 steps" and nothing
more; a launcher starting the agent as a subprocess recorded 0 steps without a warning;
a first recording whose program died of a SyntaxError left a header-only trace that later
read as a valid run without calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewind.engine.providers import PROVIDERS
from rewind.stub_server import StubServer

RunCli = Callable[..., Any]

AGENT = (
    "import openai\n"
    "client = openai.OpenAI(max_retries=0)\n"
    "r = client.chat.completions.create(model='gpt-4o-mini', messages=[{'role': 'user', 'content': 'hello'}])\n"
    "print(r.choices[0].message.content)\n"
)
LAUNCHER = "import subprocess, sys\nsubprocess.run([sys.executable, 'agent.py'], check=True)\n"


def test_a_program_that_never_reaches_an_sdk_says_why_nothing_was_recorded(run_cli: RunCli) -> None:
    result = run_cli("record", "run.rewind", "--", sys.executable, "-c", "print(1)")
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("rewind: recorded 0 steps to run.rewind: nothing was recorded because the program never ")
    assert "imported an instrumented SDK" in line and "record the agent's own command" in line


def test_an_sdk_imported_but_never_called_is_named(run_cli: RunCli) -> None:
    result = run_cli("record", "run.rewind", "--", sys.executable, "-c", "import openai")
    assert result.returncode == 0, result.stderr
    assert "the program has openai but made no call through it in this process" in result.stderr


def _launcher(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "launcher.py").write_text(LAUNCHER)
    return {"OPENAI_API_KEY": "sk-test"}


def test_a_launcher_recorded_by_the_cli_says_its_subprocess_was_not_recorded(run_cli: RunCli, tmp_path: Path) -> None:
    env = _launcher(tmp_path)
    with StubServer() as server:
        result = run_cli(
            "record",
            "run.rewind",
            "--",
            sys.executable,
            "launcher.py",
            env={**env, "OPENAI_BASE_URL": server.openai_base_url},
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Echo: hello\n"
    assert "uses openai, but its calls were not recorded" in result.stderr, result.stderr
    assert "agent.py" in result.stderr and "Run the agent's own command under rewind record" in result.stderr
    assert "recorded 0 steps to run.rewind: nothing was recorded because" in result.stderr


def test_a_zero_code_launcher_says_its_subprocess_was_not_recorded(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    env.update(_launcher(tmp_path), REWIND_RECORD=str(tmp_path / "run.rewind"))
    with StubServer() as server:
        env["OPENAI_BASE_URL"] = server.openai_base_url
        result = subprocess.run(
            [sys.executable, "launcher.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 0, result.stderr
    assert "uses openai, but its calls were not recorded" in result.stderr, result.stderr
    assert "nothing was recorded because" in result.stderr


def test_a_first_recording_that_dies_of_a_syntax_error_is_marked_incomplete(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import openai\ndef broken(:\n")
    result = run_cli("record", "run.rewind", "--", sys.executable, "agent.py")
    assert result.returncode == 1
    assert "SyntaxError" in result.stderr
    assert "the program failed before its first call (SyntaxError: " in result.stderr, result.stderr
    header = json.loads((tmp_path / "run.rewind").read_text().splitlines()[0])
    assert header["incomplete"].startswith("the program failed before its first call (SyntaxError: ")
    check = run_cli("check", "run.rewind")
    assert check.returncode == 1, check.stdout
    assert "incomplete: the program failed before its first call" in check.stdout
    assert json.loads(run_cli("check", "--json", "run.rewind").stdout)["incomplete"] == header["incomplete"]
    assert "incomplete: the program failed before its first call" in run_cli("show", "run.rewind").stdout
    replay = run_cli("replay", "run.rewind", "--", sys.executable, "-c", "print(1)")
    assert replay.returncode == 2 and "is incomplete: the program failed before its first call" in replay.stderr


def test_a_program_that_exits_before_its_first_call_is_marked_by_the_cli(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("record", "run.rewind", "--", sys.executable, "-c", "import os; os._exit(3)")
    assert result.returncode == 3
    assert "the program failed before its first call (it exited with status 3)" in result.stderr
    check = run_cli("check", "run.rewind")
    assert check.returncode == 1 and "incomplete:" in check.stdout


def test_a_clean_run_without_calls_is_still_a_complete_empty_trace(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("record", "run.rewind", "--", sys.executable, "-c", "print(1)").returncode == 0
    assert "incomplete" not in json.loads((tmp_path / "run.rewind").read_text())
    assert run_cli("check", "run.rewind").returncode == 0


def test_the_start_up_hook_knows_every_instrumented_sdk(tmp_path: Path) -> None:
    # The CLI derives the list from the providers' declarations and hands it to the child's
    # start-up hook, which reads it under the same name without importing rewind.
    from rewind import _autostart
    from rewind.cli._run import child_environment

    env = child_environment({}, str(tmp_path / "status"))
    listed = env[_autostart.SDK_MODULES_VARIABLE].split(",")
    assert set(listed) == {p.sdk for p in PROVIDERS.values()} and "google.genai" in listed
    source = (Path(_autostart.__file__).parent / "sitecustomize.py").read_text()
    assert f'SDK_MODULES_VARIABLE = "{_autostart.SDK_MODULES_VARIABLE}"' in source
