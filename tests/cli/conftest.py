from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REWIND = Path(sys.executable).with_name("rewind")

# Variables that change how the CLI prints; each test sets the ones it means to.
_SCRUBBED = ("NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "PAGER", "COLUMNS", "LINES", "TERM")

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def rewind_script() -> Path:
    if not REWIND.exists():
        pytest.fail(f"the rewind console script is missing at {REWIND}; run `.venv/bin/pip install -e .`")
    return REWIND


@pytest.fixture
def run_cli(rewind_script: Path, tmp_path: Path) -> RunCli:
    """``run_cli(*args, input=None, env={})``: the installed ``rewind`` script in a subprocess."""

    def run(
        *args: object, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        full_env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REWIND_")) and k not in _SCRUBBED
        }
        full_env.update(env or {})
        return subprocess.run(
            [str(rewind_script), *map(str, args)],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env=full_env,
            cwd=tmp_path,
            timeout=60,
        )

    return run


def assert_input_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2 with exactly one ``rewind: error:`` line on stderr naming ``fragments``; no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("rewind: error: "), line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


@pytest.fixture
def input_error() -> Callable[..., str]:
    """``input_error(result, *fragments)``: assert a one-line input error (see ``assert_input_error``)."""
    return assert_input_error
