"""The OpenAI examples run offline, end to end, in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("real_agent_demo.py", ["2. the server is gone", "first divergence", "only in A"]),
        ("async_streaming_demo.py", ["truncated", "replayed offline"]),
    ],
)
def test_example_runs_offline(script: str, expected: list[str]) -> None:
    env = {"PATH": "", "PYTHONWARNINGS": "error::UserWarning"}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    for text in expected:
        assert text in result.stdout
