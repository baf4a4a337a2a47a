"""``rewind mutate TRACE -- CMD``: one fault per run, injected into an unmodified program."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rewind.stub_server import StubServer

RunCli = Callable[..., subprocess.CompletedProcess[str]]
TESTS = Path(__file__).resolve().parent.parent
AGENT = """
import json, os, sys, time, what_if_agent as a
try:
    print(json.dumps(a.run_agent(a.client(os.environ["OPENAI_BASE_URL"]))))
except Exception:
    if "--hang" in sys.argv:
        time.sleep(600)  # "wait for the quota to reset"
    raise
"""


def _env(base_url: str = "http://127.0.0.1:9/v1") -> dict[str, str]:
    return {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "stub", "PYTHONPATH": str(TESTS)}


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT, encoding="utf-8")
    return path


@pytest.fixture
def golden(run_cli: RunCli, program: Path, tmp_path: Path) -> Path:
    import what_if_agent

    path = tmp_path / "golden.rewind"
    with StubServer(script=what_if_agent.SCRIPT) as server:
        result = run_cli("record", path, "--", sys.executable, program, env=_env(server.openai_base_url))
    assert result.returncode == 0, result.stderr
    return path


def test_mutate_tabulates_what_the_program_did(run_cli: RunCli, program: Path, golden: Path) -> None:
    result = run_cli(
        "mutate", golden, "--step", 0, "--step", 1, "-f", "rate_limit", "-f", "server_error", "-f", "tool_error",
        "--retry-after", "0.05", "--", sys.executable, program, env=_env(),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # a run crashed
    lines = result.stdout.splitlines()
    assert lines[0].endswith("golden.rewind (seed 0): 3 mutations")
    rows = {line.split()[3]: line for line in lines[2:-1]}
    assert rows["rate_limit"].split()[:3] == ["0", "llm", "openai.chat.completions.create"]
    assert "recovered, same answer" in rows["rate_limit"]
    assert "crashed: openai.InternalServerError: Error code: 500" in rows["server_error"]
    assert "diverged: at step 3" in rows["tool_error"]
    assert lines[-1] == "summary: 1 same, 1 crashed, 1 diverged"


def test_mutate_json_and_a_hung_program(run_cli: RunCli, program: Path, golden: Path) -> None:
    started = time.perf_counter()
    result = run_cli(
        "mutate", golden, "--step", 0, "-f", "timeout", "--timeout", 4, "--json",
        "--", sys.executable, program, "--hang", env=_env(),
    )  # fmt: skip
    assert time.perf_counter() - started < 40
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert json.loads(report["baseline"]["stdout"])["answer"] == "Umbrella for Paris only."
    (row,) = report["results"]
    assert (row["step"], row["fault"], row["outcome"]) == (0, "timeout", "hung")
    assert row["detail"] == "no exit after 4s (stopped)"
    assert report["counts"]["hung"] == 1


def test_mutate_input_errors(run_cli: RunCli, program: Path, golden: Path, tmp_path: Path) -> None:
    bad_step = run_cli("mutate", golden, "--step", 9, "--", sys.executable, program, env=_env())
    assert bad_step.returncode == 2 and "has no step 9" in bad_step.stderr
    other = tmp_path / "other.py"
    other.write_text("import what_if_agent as a\na.client('http://127.0.0.1:9/v1').models.list()\n", encoding="utf-8")
    broken = run_cli("mutate", golden, "-f", "timeout", "--", sys.executable, other, env=_env())
    assert broken.returncode == 2
    assert "the unmutated replay of" in broken.stderr and "mutations would mean nothing" in broken.stderr


COHERE_AGENT = """
import inspect, os, sys, time
import cohere

options = {"max_retries": 0} if "max_retries" in inspect.signature(cohere.ClientV2.__init__).parameters else {}
co = cohere.ClientV2(api_key="stub", base_url=os.environ["CO_API_URL"], **options)
for attempt in range(2):
    try:
        reply = co.chat(model="command-a-03-2025", messages=[{"role": "user", "content": "Plan a day in Paris."}])
        break
    except cohere.errors.TooManyRequestsError as exc:  # the agent's own retry code
        if attempt:
            raise
        time.sleep(float((getattr(exc, "headers", None) or {}).get("retry-after", "0")))
print(reply.message.content[0].text)
"""


def test_mutate_injects_provider_faults_into_a_non_stainless_sdk(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("cohere")
    program = tmp_path / "cohere_agent.py"
    program.write_text(COHERE_AGENT, encoding="utf-8")
    golden = tmp_path / "cohere.rewind"
    env = {"CO_API_KEY": "stub", "PYTHONPATH": str(TESTS)}
    with StubServer() as server:
        recorded = run_cli("record", golden, "--", sys.executable, program, env={**env, "CO_API_URL": server.url})
    assert recorded.returncode == 0, recorded.stderr
    result = run_cli(
        "mutate", golden, "-f", "rate_limit", "-f", "server_error", "--retry-after", "0.05",
        "--", sys.executable, program, env={**env, "CO_API_URL": "http://127.0.0.1:9"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # the 500 is not retried
    rows = {line.split()[3]: line for line in result.stdout.splitlines()[2:-1]}
    assert rows["rate_limit"].split()[:3] == ["0", "llm", "cohere.v2.chat"]
    assert "recovered, same answer" in rows["rate_limit"]
    assert "crashed: cohere.errors.internal_server_error.InternalServerError" in rows["server_error"]
