"""``rewind replay --live/--never-live/--model`` and ``REWIND_LIVE`` & co., over real child
processes running the OpenAI SDK against the loopback stub server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewind
from rewind.stub_server import StubServer

RunCli = Callable[..., Any]

AGENT = """
import os
import openai
import rewind

@rewind.tool(name="refund")
def refund(amount):
    with open(os.environ["REFUND_LOG"], "a") as log:  # the real side effect
        log.write(f"{amount}\\n")
    return f"refunded {amount}"

client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
print(reply.choices[0].message.content)
print(refund(int(os.environ.get("AMOUNT", "5"))))
"""


@pytest.fixture
def setup(stub: StubServer, tmp_path: Path, run_cli: RunCli) -> dict[str, Any]:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    log = tmp_path / "refunds.log"
    env = {"OPENAI_BASE_URL": stub.openai_base_url, "OPENAI_API_KEY": "sk-stub", "REFUND_LOG": str(log)}
    recorded = run_cli("record", "run.rewind", "--", sys.executable, agent, env=env)
    assert recorded.returncode == 0, recorded.stderr
    assert log.read_text() == "5\n"
    log.unlink()
    return {"agent": agent, "env": env, "log": log, "trace": tmp_path / "run.rewind"}


def test_live_llm_never_live_refund_and_a_model_map_from_the_cli(
    setup: dict[str, Any], stub: StubServer, run_cli: RunCli, tmp_path: Path
) -> None:
    stub.add_script("A different answer.")
    before = stub.request_count
    result = run_cli(
        "replay", "run.rewind", "--live", "llm", "--never-live", "refund", "--model", "gpt-4o-mini=gpt-4.1",
        "--save-as", "hybrid.rewind", "--", sys.executable, setup["agent"], env=setup["env"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["A different answer.", "refunded 5"]
    assert not setup["log"].exists()  # refund was served, never run
    assert [r.body["model"] for r in stub.requests[before:]] == ["gpt-4.1"]
    saved = rewind.Trace.load(tmp_path / "hybrid.rewind")
    assert saved.header["hybrid_of"]["model_map"] == {"gpt-4o-mini": "gpt-4.1"}
    assert [(e.kind, e.live) for e in saved.events] == [("llm", True), ("tool", False)]
    shown = run_cli("show", "hybrid.rewind")
    assert "hybrid replay of" in shown.stdout and "↺" in shown.stdout and " live " in shown.stdout


def test_never_live_without_a_recorded_answer_fails_the_run_and_nothing_runs(
    setup: dict[str, Any], run_cli: RunCli
) -> None:
    env = {**setup["env"], "AMOUNT": "500"}
    result = run_cli(
        "replay", "run.rewind", "--live", "llm", "--never-live", "refund", "--", sys.executable, setup["agent"], env=env
    )
    assert result.returncode != 0
    assert "never_live: tool call 'refund'" in result.stderr and "must never run for real" in result.stderr
    assert not setup["log"].exists()


def test_the_environment_opens_the_same_hybrid_replay(setup: dict[str, Any], stub: StubServer) -> None:
    """Zero-code: ``REWIND_REPLAY`` + ``REWIND_LIVE`` & co. under plain ``python``."""
    stub.add_script("From the environment.")
    env = {
        **{k: v for k, v in __import__("os").environ.items() if not k.startswith(("REWIND_", "OTEL_"))},
        **setup["env"],
        "REWIND_REPLAY": str(setup["trace"]),
        "REWIND_LIVE": "llm",
        "REWIND_NEVER_LIVE": "refund",
        "REWIND_MODEL_MAP": "gpt-4o-mini=gpt-4.1",
    }
    before = stub.request_count
    result = subprocess.run(
        [sys.executable, str(setup["agent"])], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["From the environment.", "refunded 5"]
    assert [r.body["model"] for r in stub.requests[before:]] == ["gpt-4.1"]
    assert not setup["log"].exists()
    bad = subprocess.run(
        [sys.executable, str(setup["agent"])],
        env={**env, "REWIND_LIVE": "toll:x"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "KIND:NAME" in bad.stderr and not setup["log"].exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--live", "toll:x"), "--live: 'toll:x' is not KIND:NAME"),
        (("--live", "llm", "--model", "gpt-4o-mini"), "--model: 'gpt-4o-mini' is not RECORDED=LIVE"),
        (("--model", "a=b"), "--model rewrites live LLM calls"),
        (("--live", "llm", "--match", "strict"), "--match parallel or fuzzy"),
        (("--live", "llm", "--fork-at", "0"), "apply to a plain replay"),
    ],
)
def test_bad_options_are_one_line_errors(
    tmp_path: Path, run_cli: RunCli, input_error: Any, args: tuple[str, ...], fragment: str
) -> None:
    with rewind.record(tmp_path / "run.rewind"):
        rewind.tool(name="refund")(lambda amount: "refunded")(5)
    ran = tmp_path / "ran"
    result = run_cli("replay", "run.rewind", *args, "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')")
    input_error(result, fragment)
    assert not ran.exists()  # the program never started
