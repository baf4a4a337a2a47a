"""`rewind import` from a running Arize Phoenix, over its HTTP API (make test-phoenix).

A fleet-style run: an unmodified openai agent runs under ``opentelemetry-instrument``,
exporting OTLP to a real Phoenix on loopback with content capture on, while rewind
records it locally. The run is then pulled back out of Phoenix and must equal the
locally written trace, and replay offline.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_phoenix import PHOENIX_PYTHON, Phoenix, _instrument_tool, _run_instrumented
from test_phoenix import phoenix as phoenix

import rewind
from rewind.cli import cli
from rewind.stub_server import StubServer

pytestmark = [
    pytest.mark.phoenix,
    pytest.mark.skipif(PHOENIX_PYTHON is None, reason="no Phoenix install (make test-phoenix creates one)"),
    pytest.mark.skipif(_instrument_tool() is None, reason="opentelemetry-instrument is not installed"),
]

AGENT = """
import json
import openai
import rewind

@rewind.tool
def lookup(city):
    return {"city": city, "flights": 3}

client = openai.OpenAI(max_retries=0)
first = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "find me a flight"}],
)
found = lookup("Paris")
second = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "book " + json.dumps(found)}],
    stream=True,
)
print(first.choices[0].message.content, "|", "".join(c.choices[0].delta.content or "" for c in second if c.choices))
"""


def _lines(path: Path) -> list[dict[str, object]]:
    return [event.to_dict() for event in rewind.Trace.load(path).events]


def test_a_run_recorded_through_phoenix_is_imported_back_exactly(phoenix: Phoenix, tmp_path: Path) -> None:
    agent, local, project = tmp_path / "agent.py", tmp_path / "local.rewind", "rewind-fleet-import"
    agent.write_text(AGENT)
    model_server = StubServer().start()
    try:
        live = _run_instrumented(agent, model_server, phoenix, project, REWIND_RECORD=str(local))
    finally:
        model_server.stop()
    assert live.returncode == 0, live.stderr
    phoenix.wait_for_spans(project, 4)  # the run span and its three steps

    imported = tmp_path / "imported.rewind"
    out = CliRunner().invoke(cli, ["import", phoenix.url, "--project", project, "-o", str(imported)])
    assert out.exit_code == 0, out.output
    assert "imported 3 step(s)" in out.output and out.output.count("[rewind, exact]") == 3
    assert _lines(imported) == _lines(local)

    # Replays offline from what Phoenix held (the model server is gone).
    env = {"PATH": "/usr/bin:/bin", "REWIND_REPLAY": str(imported), "OPENAI_API_KEY": "unused"}
    env["OPENAI_BASE_URL"] = model_server.openai_base_url
    replay = subprocess.run(
        [sys.executable, str(agent)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == live.stdout


def test_unknown_project_and_unreachable_server_are_one_line_errors(phoenix: Phoenix, tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["import", phoenix.url, "--project", "no-such-project", "-o", str(tmp_path / "x")])
    assert out.exit_code == 2 and "no-such-project" in out.output and "Traceback" not in out.output
    out = CliRunner().invoke(cli, ["import", "http://127.0.0.1:9", "-o", str(tmp_path / "y")])
    assert out.exit_code == 2 and "cannot reach Phoenix" in out.output
