"""``rewind refresh TRACE -- CMD``: an unmodified agent's golden brought up to date from its divergence."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import what_if_agent

from rewind.storage.trace import Trace
from rewind.stub_server import StubServer

RunCli = Callable[..., subprocess.CompletedProcess[str]]

TESTS = Path(__file__).resolve().parent.parent
AGENT = TESTS / "refresh_agent.py"


def _env(server: StubServer, **extra: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "stub", "PYTHONPATH": str(TESTS), **extra}


@pytest.fixture
def server() -> StubServer:
    with StubServer(script=what_if_agent.SCRIPT, script_mode="conversation") as running:
        yield running


@pytest.fixture
def golden(run_cli: RunCli, server: StubServer, tmp_path: Path) -> Path:
    path = tmp_path / "golden.rewind"
    result = run_cli("record", path, "--", sys.executable, AGENT, env=_env(server))
    assert result.returncode == 0, result.stderr
    assert len(Trace.load(path).events) == 4
    return path


def test_refresh_keeps_the_steps_before_the_divergence_and_records_the_rest(
    run_cli: RunCli, server: StubServer, golden: Path, tmp_path: Path
) -> None:
    before = Trace.load(golden)
    served = server.request_count
    html = tmp_path / "refresh.html"

    result = run_cli(
        "refresh", golden, "--html", html, "--", sys.executable, AGENT, env=_env(server, AGENT_STYLE="One word.")
    )

    assert result.returncode == 0, result.stderr
    # The two tools were served from the golden (not run), the last model call went live.
    assert result.stdout.splitlines()[0] == "tools run live: []"
    assert server.request_count == served + 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"rewind: refreshed {golden}: kept steps 0-2 from the recording, recorded step 3 anew "
        "(step 3 diverged: prompt/content drift)"
    )
    assert lines[1].startswith("rewind: saved against a full re-record: 1 llm call (")
    assert "and 2 tool steps not run again" in lines[1]
    after = Trace.load(golden)
    assert [(e.seq, e.live) for e in after.events] == [(0, False), (1, False), (2, False), (3, True)]
    assert [e.response for e in after.events[:3]] == [e.response for e in before.events[:3]]
    assert "One word." in str(after.events[3].request)
    assert after.header["forked_from"]["refresh"] is True
    assert '"view":"diff"' in html.read_text(encoding="utf-8")
    assert not list(tmp_path.glob("*.recording-*"))

    # Replayed again with the same change, the refreshed golden is up to date: nothing is written.
    stamp = os.stat(golden).st_mtime_ns
    again = run_cli("refresh", golden, "--", sys.executable, AGENT, env=_env(server, AGENT_STYLE="One word."))
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == [f"rewind: {golden} is up to date: the run replayed all 4 steps"]
    assert os.stat(golden).st_mtime_ns == stamp
    shown = run_cli("show", golden)
    assert f"refreshed from {golden}" in shown.stdout


def test_save_as_keeps_the_golden(run_cli: RunCli, server: StubServer, golden: Path, tmp_path: Path) -> None:
    before = golden.read_bytes()
    fresh = tmp_path / "fresh.rewind"
    result = run_cli(
        "refresh", golden, "--save-as", fresh, "--", sys.executable, AGENT, env=_env(server, AGENT_STYLE="Short.")
    )
    assert result.returncode == 0, result.stderr
    assert golden.read_bytes() == before
    assert [e.live for e in Trace.load(fresh).events] == [False, False, False, True]
    assert f"rewind: the refreshed run is in {fresh}" in result.stderr


def test_a_failing_live_part_leaves_the_golden_untouched(
    run_cli: RunCli, server: StubServer, golden: Path, tmp_path: Path
) -> None:
    before = golden.read_bytes()
    server.fail_next(500)  # the live call of the diverged step fails; the agent does not retry
    result = run_cli("refresh", golden, "--", sys.executable, AGENT, env=_env(server, AGENT_STYLE="One word."))
    assert result.returncode == 1, result.stderr
    assert golden.read_bytes() == before
    assert result.stderr.splitlines()[-1] == f"rewind: the refreshed run failed (exit status 1); {golden} is unchanged"
    assert not list(tmp_path.glob("*.recording-*"))


def test_bad_input_is_one_line(run_cli: RunCli, golden: Path, tmp_path: Path) -> None:
    missing = run_cli("refresh", tmp_path / "nope.rewind", "--", sys.executable, AGENT)
    assert missing.returncode == 2 and missing.stderr.startswith("rewind: error: ")
    folder = run_cli("refresh", golden, "--save-as", tmp_path, "--", sys.executable, AGENT)
    assert folder.returncode == 2 and "is a directory" in folder.stderr
    onto = run_cli("refresh", golden, "--html", golden, "--", sys.executable, AGENT)
    assert onto.returncode == 2 and "would overwrite a trace" in onto.stderr
    no_command = run_cli("refresh", golden)
    assert no_command.returncode == 2 and "no command to run" in no_command.stderr
