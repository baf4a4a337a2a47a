"""The suite run against an installed copy of agent-rewind-otel (make test-installed).

`make test-installed` builds the sdist and the wheel, installs each into a clean venv, copies
this folder (and tests/importing/otlp_files.py) into an empty temporary folder and runs pytest
there with that venv's Python: no source tree is on ``sys.path``, so ``rewind`` can only come
from site-packages. ``test_rewind_is_the_installed_copy`` checks it did.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewind.stub_server import StubServer

BIN = Path(sys.executable).parent
SITE = Path(sysconfig.get_paths()["purelib"])
#: one model call, then one that depends on it (`rewind fork --at 1` serves the first only)
AGENT = """
import os
import openai
client = openai.OpenAI(max_retries=0)
task = os.environ.get("TASK", "find me a flight to Lisbon")
first = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": task}])
plan = first.choices[0].message.content
second = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": task}, {"role": "assistant", "content": plan}]
)
print("ANSWER:", second.choices[0].message.content)
"""


def environment(stub: StubServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_", "PYTHON"))}
    env.update(
        OPENAI_BASE_URL=stub.openai_base_url,
        OPENAI_API_KEY="sk-installed-suite",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_TRACES_EXPORTER="none",
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.update(extra)
    return env


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


@pytest.fixture
def run(tmp_path: Path, stub: StubServer):
    """``run(*command, **env)``: a real subprocess in tmp_path, the installed venv's tools on PATH."""

    def _run(*command: str | Path, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(part) for part in command],
            env=environment(stub, **extra),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )

    return _run
