"""``rewind fork TRACE --at N --edit step.json -- CMD``: edit and continue an unmodified program."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rewind.storage.trace import Trace
from rewind.stub_server import StubServer

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def assert_input_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit 2 with one ``rewind: error:`` line naming ``fragments``; no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rewind: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


TESTS = Path(__file__).resolve().parent.parent
AGENT = """
import json, os, what_if_agent as a
print(json.dumps(a.run_agent(a.client(os.environ["OPENAI_BASE_URL"]))))
print("live tools:", a.LIVE)
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT, encoding="utf-8")
    return path


def _env(base_url: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "stub", "PYTHONPATH": str(TESTS)}


@pytest.fixture
def golden(run_cli: RunCli, program: Path, tmp_path: Path) -> Path:
    import what_if_agent

    path = tmp_path / "golden.rewind"
    with StubServer(script=what_if_agent.SCRIPT) as server:
        result = run_cli("record", path, "--", sys.executable, program, env=_env(server.openai_base_url))
    assert result.returncode == 0, result.stderr
    return path


def test_fork_with_an_edit_changes_the_tool_the_program_calls(
    run_cli: RunCli, program: Path, golden: Path, tmp_path: Path
) -> None:
    step = Trace.load(golden).events[0].to_dict()
    message = step["response"]["choices"][0]["message"]
    message["tool_calls"] = [
        {**message["tool_calls"][0], "function": {"name": "get_news", "arguments": '{"city": "Rome"}'}}
    ]
    edit = tmp_path / "step0.json"
    edit.write_text(json.dumps(step), encoding="utf-8")
    forked = tmp_path / "news.rewind"
    with StubServer(script=["Rome opens a museum."]) as server:
        result = run_cli(
            "fork", golden, "--at", 0, "--edit", edit, "--save-as", forked, "--",
            sys.executable, program, env=_env(server.openai_base_url),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert json.loads(lines[0]) == {"tools": ["get_news"], "answer": "Rome opens a museum."}
    assert lines[1] == "live tools: ['get_news:Rome']"
    assert "step 0 was served the edit in" in result.stderr

    shown = run_cli("show", forked)
    assert "step 0 (llm openai.chat.completions.create) was served an edited response from" in shown.stdout
    assert "step0.json" in shown.stdout
    diff = run_cli("diff", golden, forked)
    assert diff.returncode == 1
    assert "note: run B is a fork of" in diff.stdout and "was served an edited response" in diff.stdout


def test_fork_edit_errors_are_one_line(run_cli: RunCli, program: Path, golden: Path, tmp_path: Path) -> None:
    py = sys.executable
    bad = tmp_path / "bad.json"
    bad.write_text("{oops", encoding="utf-8")
    assert_input_error(run_cli("fork", golden, "--at", 0, "--edit", bad, "--", py, program), "not valid JSON", "line 1")
    good = tmp_path / "good.json"
    good.write_text('{"rain_mm": 1}', encoding="utf-8")
    assert_input_error(
        run_cli("fork", golden, "--at", 9, "--edit", good, "--", py, program), "no step 9 to edit", "4 steps"
    )
    assert_input_error(run_cli("fork", golden, "--at", 1, "--then", "replay", "--", py, program), "--then applies")
