from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewind.stub_server import StubServer

REPO = Path(__file__).resolve().parent.parent
# tests/installed/ runs against an installed copy, from a folder of its own (make test-installed).
collect_ignore = ["installed"]


@pytest.fixture
def trace_path(tmp_path: Path) -> Path:
    return tmp_path / "run.rewind"


def _run_python(
    code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (a real separate process)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        cwd=str(cwd or REPO),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_python():
    """``run_python(code, env=..., cwd=...)``: run code in a fresh interpreter."""
    return _run_python


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """The project's loopback model server (OpenAI and Anthropic wire formats), stopped after the test."""
    with StubServer() as server:
        yield server
