"""``rewind replay`` and ``REWIND_REPLAY`` need no API key: unset keys get a placeholder."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewind.engine.placeholder_keys import PLACEHOLDER, missing
from rewind.stub_server import StubServer

pytest.importorskip("openai")

RunCli = Callable[..., Any]

AGENT = """
import os
import openai

client = openai.OpenAI(max_retries=0)  # reads OPENAI_API_KEY, as a real agent does
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
print(reply.choices[0].message.content, "| key:", os.environ["OPENAI_API_KEY"])
"""


def test_rewind_replay_without_a_key(run_cli: RunCli, tmp_path: Path, stub: StubServer) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    live = {"OPENAI_BASE_URL": stub.openai_base_url, "OPENAI_API_KEY": "sk-recording"}
    recorded = run_cli("record", "run.rewind", "--", sys.executable, agent, env=live)
    assert recorded.returncode == 0, recorded.stderr
    stub.stop()
    # Before placeholders: openai.OpenAI() raised "The api_key client option must be set".
    keyless = run_cli("replay", "run.rewind", "--", sys.executable, agent, env={"OPENAI_API_KEY": ""})
    assert keyless.returncode == 0, keyless.stderr
    assert keyless.stdout == f"Echo: hi | key: {PLACEHOLDER}\n"
    mine = run_cli("replay", "run.rewind", "--", sys.executable, agent, env={"OPENAI_API_KEY": "sk-mine"})
    assert mine.stdout == "Echo: hi | key: sk-mine\n"  # never overridden


def test_which_keys_get_a_placeholder() -> None:
    assert set(missing({})) == {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GROQ_API_KEY",
        "TOGETHER_API_KEY",
        "FIREWORKS_API_KEY",
        "MISTRAL_API_KEY",
        "CO_API_KEY",
        "GEMINI_API_KEY",
    }
    # google-genai warns when both of its variables are set: one real one is enough.
    assert "GEMINI_API_KEY" not in missing({"GOOGLE_API_KEY": "g"})
    assert "OPENAI_API_KEY" not in missing({"OPENAI_API_KEY": "sk"})
